use llm_tools_core::tool;

pub struct Weather;

#[tool]
impl Default for Weather {
    fn default() -> Self {
        Weather
    }
}

fn main() {}
