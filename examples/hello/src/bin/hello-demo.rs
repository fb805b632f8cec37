//! Runs the example flow in-process and prints what came back.

use tiny_sdk::harness::Harness;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let mut harness = Harness::builder();
    harness = harness.register::<tiny_example_hello::Hello>();
    harness = harness.register::<tiny_example_hello::Shout>();
    harness = harness.register::<tiny_example_hello::Respond>();
    let h = match harness.yaml(tiny_example_hello::GREET_FLOW).build().await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("the flow did not load: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    for result in h.run_signals().await {
        match result {
            Ok(reply) => println!("{}", reply.into_value().unwrap_or_default()),
            Err(e) => {
                eprintln!("the flow failed: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
