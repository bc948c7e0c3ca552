use llm_tools_core::tool;

/// Everything at once: each mistake is reported, in one compile.
#[tool(name = "3d", max_run_time = "soon", spill_to_file, colour = "red")]
fn render<T>(scene: &str, _mode: impl Sized) -> String {
    scene.to_owned()
}

fn main() {
    // The tool type exists despite the errors: no follow-up error here.
    let _ = Render::NAME;
}
