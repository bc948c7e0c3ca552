use llm_tools_core::tool;

pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// Measures the distance to a point
#[tool]
async fn distance(from: Point, scale: f64) -> f64 {
    (from.x * from.x + from.y * from.y).sqrt() * scale
}

fn main() {}
