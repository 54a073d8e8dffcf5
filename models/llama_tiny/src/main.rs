//! The `llama_tiny` decoder binary: `llama_tiny --prompt "..." [--max-tokens N]
//! [--temperature T --top-k K --top-p P --seed S]` prints the generated text
//! as it is produced and the prefill / decode speeds on stderr (rlx_decode::cli).

fn main() -> std::process::ExitCode {
    use llama_tiny::GeneratedModel;
    // Built once the arguments are good: `--help` needs no weights, and
    // missing weights are one line, exit code 2.
    let make = || {
        let model = llama_tiny::Model::try_new().map_err(|e| e.to_string())?;
        rlx_decode::GeneratedStep::new(model).map_err(|e| e.to_string())
    };
    let files = rlx_decode::cli::Embedded {
        tokenizer_json: include_bytes!("../tokenizer.json"),
        generation_json: include_str!("../generation.json"),
    };
    rlx_decode::cli::main_with(make, files)
}
