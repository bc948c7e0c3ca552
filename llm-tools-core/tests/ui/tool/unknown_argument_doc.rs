use llm_tools_core::tool;

/// Gets current weather for a location
///
/// # Arguments
/// * `lattitude` - Latitude in decimal degrees
/// * `longitude` - Longitude in decimal degrees
#[tool]
async fn weather(latitude: f64, longitude: f64) -> String {
    format!("{latitude},{longitude}")
}

fn main() {}
