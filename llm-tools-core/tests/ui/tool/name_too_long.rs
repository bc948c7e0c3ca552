use llm_tools_core::tool;

/// Does something with a very long name
#[tool]
async fn look_up_the_current_weather_for_a_city_and_its_surroundings_today() -> String {
    String::new()
}

fn main() {}
