use llm_tools_core::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Window {
    pub days: u32,
}

/// Lists bookings
#[tool]
async fn bookings(#[arg(default)] window: Window) -> u32 {
    window.days
}

fn main() {}
