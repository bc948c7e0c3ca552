// `fn signup` would generate `struct Signup`, and the fn takes the user's `Signup`: one error,
// on the fn's name, saying to set `struct_name`.
use llm_tools_core::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Signup {
    email: String,
}

/// Signs a user up
#[tool]
async fn signup(form: Signup) -> String {
    form.email
}

fn main() {}
