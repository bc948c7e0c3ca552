//! The serving tests' tools as an MCP server on stdio, the way an MCP client starts one.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    llm_tools_tests::served_tools::server()?
        .serve_stdio()
        .await?;
    Ok(())
}
