use llm_tools_core::tool;

/// Gets current weather for a location
///
/// # Arguments
/// * latitude - Latitude in decimal degrees
/// * the longitude, in decimal degrees
#[tool]
async fn weather(latitude: f64, longitude: f64) -> String {
    format!("{latitude},{longitude}")
}

fn main() {}
