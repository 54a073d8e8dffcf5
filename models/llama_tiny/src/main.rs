//! The `llama_tiny` decoder binary: `llama_tiny --prompt "..." [--max-tokens N]
//! [--temperature T --top-k K --top-p P --seed S]` prints the generated text
//! as it is produced and the prefill / decode speeds on stderr.

fn main() -> std::process::ExitCode {
    use llama_tiny::GeneratedModel;
    let step = match rlx_decode::GeneratedStep::new(llama_tiny::Model::new()) {
        Ok(step) => step,
        Err(e) => {
            eprintln!("llama_tiny: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    rlx_decode::cli::main(step, include_bytes!("../tokenizer.json"))
}
