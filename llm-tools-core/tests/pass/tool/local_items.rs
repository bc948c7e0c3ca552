//! Tools declared inside a fn body and from a `macro_rules!` macro.

use llm_tools_core::{tool, Tool};

macro_rules! echo_tool {
    ($name:ident, $doc:literal) => {
        #[doc = $doc]
        #[tool]
        async fn $name(text: String) -> String {
            text
        }
    };
}

echo_tool!(echo, "Echoes the text");

fn main() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Point {
        x: f64,
        y: f64,
    }

    /// Measures a point
    #[tool]
    async fn norm(point: Point) -> f64 {
        (point.x * point.x + point.y * point.y).sqrt()
    }

    assert_eq!(Norm.spec().name(), "norm");
    assert_eq!(Echo.spec().description(), "Echoes the text");
}
