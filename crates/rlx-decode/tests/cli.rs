//! The decoder command line: in process over the mock model (every
//! argument and error), and as a process (`rlx-decode-mock`).

mod common;

use std::process::{Command, ExitCode};

use common::mock::{successor, Bigram};
use rlx_decode::Tokenizer;

const PROG: &str = "rlx-decode-mock";

/// Runs the CLI in process; returns (exit code, stdout, stderr).
fn cli(args: &[&str]) -> (ExitCode, String, String) {
    cli_vocab(512, args)
}

/// [`cli`] over a mock model of `vocab` tokens.
fn cli_vocab(vocab: usize, args: &[&str]) -> (ExitCode, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once(PROG).chain(args.iter().copied());
    let code = rlx_decode::cli::main_from(|| Ok(Bigram::new(vocab, 4, 64)), common::FILES, argv, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

/// The greedy continuation of `prompt` under the mock model.
fn greedy_ids(prompt: &str, n: usize) -> Vec<u32> {
    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let mut t = *tok.encode(prompt).unwrap().last().unwrap() as i64;
    (0..n)
        .map(|_| {
            t = successor(t, 512);
            t as u32
        })
        .collect()
}

fn check_report(err: &str, prompt_tokens: usize, decode_tokens: usize) {
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    let prefill = format!("prefill: {prompt_tokens} tokens, ");
    let decode = format!("decode: {decode_tokens} tokens, ");
    assert!(lines[0].starts_with(&prefill) && lines[0].ends_with(" tok/s"), "{err}");
    assert!(lines[1].starts_with(&decode) && lines[1].ends_with(" tok/s"), "{err}");
    assert!(lines[0].contains(" ms, "), "{err}");
}

#[test]
fn ids_mode_prints_the_greedy_ids() {
    let (code, out, err) = cli(&["--prompt", "Hello, world!", "--max-tokens", "5", "--ids"]);
    assert_eq!(code, ExitCode::SUCCESS, "{err}");
    // "Hello, world!" ends in token 1; the walk is t -> 7t + 3 mod 512.
    assert_eq!(out, "10 73 2 17 122\n");
    assert_eq!(greedy_ids("Hello, world!", 5), [10, 73, 2, 17, 122]);
    check_report(&err, 10, 4);
}

#[test]
fn text_mode_prints_the_decoded_text_and_a_newline() {
    let (code, out, err) = cli(&["--prompt", "def f(x):", "--max-tokens", "12"]);
    assert_eq!(code, ExitCode::SUCCESS, "{err}");
    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let ids: Vec<u32> = greedy_ids("def f(x):", 12).into_iter().take_while(|&t| t != 0).collect();
    assert_eq!(out, format!("{}\n", tok.decode(&ids).unwrap()));
}

#[test]
fn the_default_is_32_greedy_tokens() {
    let (code, out, _) = cli(&["--prompt", "the", "--ids"]);
    assert_eq!(code, ExitCode::SUCCESS);
    let want: Vec<String> = greedy_ids("the", 32).iter().take_while(|&&t| t != 0).map(u32::to_string).collect();
    assert_eq!(out, format!("{}\n", want.join(" ")));
}

#[test]
fn a_seed_makes_sampling_reproducible() {
    let args = ["--prompt", "abc", "--temperature", "1.5", "--top-k", "3", "--top-p", "0.9", "--seed", "9", "--ids"];
    let (code, a, _) = cli(&args);
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(cli(&args).1, a);
}

/// `n` greedy ids after `last`, space-separated.
fn walk(last: i64, n: usize, vocab: usize) -> String {
    let ids: Vec<String> = Bigram::new(vocab, 4, 64).greedy_after(last, n).iter().map(i64::to_string).collect();
    ids.join(" ")
}

#[test]
fn prompt_ids_are_fed_as_they_are() {
    let (code, out, err) = cli(&["--prompt-ids", "5,300,3", "--max-tokens", "5", "--ids"]);
    assert_eq!(code, ExitCode::SUCCESS, "{err}");
    assert_eq!(out, format!("{}\n", walk(3, 5, 512)));
    check_report(&err, 3, 4);
    // The same prompt as text gives the same ids.
    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let ids: Vec<String> = tok.encode("Hello, world!").unwrap().iter().map(u32::to_string).collect();
    let by_ids = cli(&["--prompt-ids", &ids.join(","), "--max-tokens", "5", "--ids"]).1;
    assert_eq!(by_ids, cli(&["--prompt", "Hello, world!", "--max-tokens", "5", "--ids"]).1);
    // Text mode decodes what is generated.
    let (code, text, _) = cli(&["--prompt-ids", &ids.join(","), "--max-tokens", "12"]);
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(text, cli(&["--prompt", "Hello, world!", "--max-tokens", "12"]).1);
}

#[test]
fn ignore_eos_generates_every_token() {
    // 7 * 219 + 3 = 1536 = 0 mod 512: the end-of-text token (id 0) follows 219.
    let (code, out, err) = cli(&["--prompt-ids", "219", "--max-tokens", "4", "--ids"]);
    assert_eq!(code, ExitCode::SUCCESS, "{err}");
    assert_eq!(out, "\n");
    assert!(err.trim_end().ends_with(", stopped at end-of-text"), "{err}");
    let (code, out, err) = cli(&["--prompt-ids", "219", "--max-tokens", "4", "--ids", "--ignore-eos"]);
    assert_eq!(code, ExitCode::SUCCESS, "{err}");
    assert_eq!(out, "0 3 24 171\n");
    check_report(&err, 1, 3);
}

#[test]
fn ids_mode_never_asks_the_tokenizer() {
    // A model vocabulary twice the tokenizer's: ids mode prints ids the
    // tokenizer does not know, text mode reports the first one.
    let (code, out, err) = cli_vocab(1024, &["--prompt-ids", "600", "--max-tokens", "4", "--ids"]);
    assert_eq!(code, ExitCode::SUCCESS, "{err}");
    assert_eq!(out, format!("{}\n", walk(600, 4, 1024)));
    let (code, _, err) = cli_vocab(1024, &["--prompt-ids", "600", "--max-tokens", "4"]);
    assert_eq!(code, ExitCode::from(1));
    // 600 -> 107 -> 752: the second token is the first one past the tokenizer.
    assert!(err.contains("sampled token id 752 is outside the tokenizer's vocabulary of 512"), "{err}");
}

#[test]
fn bad_arguments_are_one_line_and_exit_code_2() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "error: missing --prompt TEXT (or --prompt-ids ID,...)"),
        (
            &["--prompt", "x", "--prompt-ids", "1"],
            "error: the argument '--prompt <TEXT>' cannot be used with '--prompt-ids <ID,...>'",
        ),
        (&["--prompt-ids", "1,x"], "error: invalid value 'x' for '--prompt-ids <ID,...>'"),
        (&["--prompt-ids", "1,512"], "error: prompt token 1 has id 512, outside the model's vocabulary of 512"),
        (&["--prompt-ids", "-1"], "error: prompt token 0 has id -1, outside the model's vocabulary of 512"),
        (&["--prompt", "x", "--threads", "0"], "error: --threads `0` is out of range: give 1 to 1024 threads"),
        (&["--prompt", "x", "--threads", "two"], "error: --threads `two` is not a number: give 1 to 1024 threads"),
        (&["--prompt", ""], "error: the prompt is empty: give at least one token"),
        (&["--prompt", "x", "--max-tokens", "abc"], "error: invalid value 'abc' for '--max-tokens <N>'"),
        (&["--prompt", "x", "--max-tokens", "-1"], "error: invalid value '-1' for '--max-tokens <N>'"),
        (
            &["--prompt", "x", "--temperature", "-1"],
            "error: --temperature `-1` is not allowed: give a finite value >= 0 (0 is greedy)",
        ),
        (&["--prompt", "x", "--temperature", "nan"], "error: --temperature `NaN` is not allowed"),
        (&["--prompt", "x", "--temperature", "warm"], "error: invalid value 'warm' for '--temperature <F>'"),
        (&["--prompt", "x", "--top-k", "0"], "error: --top-k `0` is not allowed: give at least 1"),
        (&["--prompt", "x", "--top-p", "0"], "error: --top-p `0` is not allowed: give a value in (0, 1]"),
        (&["--prompt", "x", "--top-p", "1.5"], "error: --top-p `1.5` is not allowed: give a value in (0, 1]"),
        (&["--prompt", "x", "--seed", "-3"], "error: invalid value '-3' for '--seed <N>'"),
        (&["--prompt", "x", "--bogus"], "error: unexpected argument '--bogus' found"),
        (
            &["--prompt", "x y", "--max-tokens", "63"],
            "error: prompt of 3 tokens + max-tokens 63 = 66 exceeds the 64 positions of the model's KV cache (`import-llama --max-len` sets them)",
        ),
    ];
    for (args, want) in cases {
        let (code, out, err) = cli(args);
        assert_eq!(code, ExitCode::from(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(&format!("{PROG}: {want}")), "{args:?}: {err}");
    }
}

#[test]
fn help_goes_to_stdout_with_success() {
    let (code, out, err) = cli(&["--help"]);
    assert_eq!(code, ExitCode::SUCCESS);
    assert!(out.contains("--max-tokens") && out.contains("--top-p") && err.is_empty(), "{out}");
}

#[test]
fn the_binary_streams_to_stdout_and_reports_on_stderr() {
    let bin = env!("CARGO_BIN_EXE_rlx-decode-mock");
    let run = |args: &[&str]| Command::new(bin).args(args).output().expect("runs");

    let o = run(&["--prompt", "Hello, world!", "--max-tokens", "5", "--ids"]);
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "10 73 2 17 122\n");
    check_report(&err, 10, 4);

    // --threads sets the pool of a real process (the in-process tests
    // leave the test binary's pool alone).
    let o = run(&["--prompt-ids", "219", "--max-tokens", "3", "--ids", "--ignore-eos", "--threads", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "0 3 24\n");

    let o = run(&["--prompt", "x", "--top-p", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert_eq!(
        String::from_utf8(o.stderr).unwrap(),
        "rlx-decode-mock: error: --top-p `2` is not allowed: give a value in (0, 1]\n"
    );
}

/// A model that cannot be built (its weights file missing) is one error
/// line and exit code 2, never a panic; `--help` and usage errors never
/// build it.
#[test]
fn a_model_that_cannot_be_built_is_one_line_and_help_never_builds_it() {
    let run = |args: &[&str]| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let argv = std::iter::once(PROG).chain(args.iter().copied());
        let missing = || -> Result<Bigram, String> { Err("cannot open weights file /x/w.safetensors: gone".into()) };
        let code = rlx_decode::cli::main_from(missing, common::FILES, argv, &mut out, &mut err);
        (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    };
    let (code, out, err) = run(&["--prompt", "hi"]);
    assert_eq!(code, ExitCode::from(2));
    assert_eq!(err, format!("{PROG}: error: cannot open weights file /x/w.safetensors: gone\n"));
    assert!(out.is_empty());
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, ExitCode::SUCCESS);
    assert!(out.contains("--prompt"), "{out}");
    let (code, _, err) = run(&["--temperature", "-1", "--prompt", "hi"]);
    assert_eq!(code, ExitCode::from(2));
    assert!(err.contains("--temperature"), "a usage error before the model: {err}");
}

/// [`cli`] with a generation config of its own (and a 256-position cache).
fn cli_with(generation_json: &'static str, args: &[&str]) -> (ExitCode, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once(PROG).chain(args.iter().copied());
    let files = rlx_decode::cli::Embedded { tokenizer_json: common::TOKENIZER_JSON, generation_json };
    let code = rlx_decode::cli::main_from(|| Ok(Bigram::new(512, 4, 256)), files, argv, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

/// The checkpoint's end-of-reply ids stop generation even when the
/// tokenizer has no special token of that name (id 73 is an ordinary
/// token), and replace the tokenizer's `<|endoftext|>`.
#[test]
fn the_checkpoints_end_ids_stop_generation() {
    // "Hello, world!" continues 10 73 2 17 122.
    let (code, out, err) = cli_with(r#"{"eos_token_ids": [2, 73]}"#, &["--prompt", "Hello, world!", "--ids"]);
    assert_eq!(code, ExitCode::SUCCESS, "{err}");
    assert_eq!(out, "10\n");
    assert!(err.trim_end().ends_with(", stopped at end-of-text"), "{err}");
    // --ignore-eos ignores them too.
    let (_, out, _) = cli_with(
        r#"{"eos_token_ids": [73]}"#,
        &["--prompt", "Hello, world!", "--ids", "--max-tokens", "3", "--ignore-eos"],
    );
    assert_eq!(out, "10 73 2\n");
    // A broken embedded file is the model's failure, reported before it is built.
    let (code, _, err) = cli_with(r#"{"eos_token_ids": "2"}"#, &["--prompt", "x"]);
    assert_eq!(code, ExitCode::from(1));
    assert_eq!(err, format!("{PROG}: error: generation.json: `eos_token_ids` is \"2\", expected a list of ids\n"));
}

const CHATML: &str = r#"{"chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"}"#;

/// `--chat` continues the conversation the template renders, system
/// message first.
#[test]
fn chat_formats_the_message_with_the_template() {
    let (code, out, err) = cli_with(CHATML, &["--chat", "hi", "--system", "be brief", "--ids", "--max-tokens", "4"]);
    assert_eq!(code, ExitCode::SUCCESS, "{err}");
    let rendered = "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let want: Vec<String> = greedy_ids(rendered, 4).iter().map(u32::to_string).collect();
    assert_eq!(out, format!("{}\n", want.join(" ")));
    check_report(&err, tok.encode(rendered).unwrap().len(), 3);

    let (code, _, err) = cli_with("{}", &["--chat", "hi"]);
    assert_eq!(code, ExitCode::from(2));
    assert!(err.contains("this model has no chat template"), "{err}");
    let (code, _, err) = cli_with(CHATML, &["--prompt", "hi", "--system", "s"]);
    assert_eq!(code, ExitCode::from(2));
    assert_eq!(err, format!("{PROG}: error: --system goes with --chat or --interactive\n"));
    let (code, _, err) = cli_with(CHATML, &["--chat", "hi", "--prompt", "x"]);
    assert_eq!(code, ExitCode::from(2), "{err}");
}

/// `--interactive` answers every line of stdin in turn; the second turn
/// prefills only what the first left out of the cache (its reply is in the
/// rendered conversation and in the cache).
#[test]
fn interactive_answers_each_line_and_keeps_the_cache() {
    use std::io::Write as _;
    use std::process::Stdio;
    let bin = env!("CARGO_BIN_EXE_rlx-decode-mock");
    let mut child = Command::new(bin)
        .args(["--interactive", "--max-tokens", "3", "--ignore-eos"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    child.stdin.take().unwrap().write_all(b"hi\n\nhow are you\n").unwrap();
    let o = child.wait_with_output().unwrap();
    let (out, err) = (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap());
    assert_eq!(o.status.code(), Some(0), "{err}");

    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let text = |ids: &[u32]| -> String {
        let bytes: Vec<u8> = ids.iter().flat_map(|&id| tok.token_bytes(id).unwrap().to_vec()).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    // The mock binary's template (tests/bin/mock_generation.json).
    let turn1 = "u: hi\na:";
    let reply1 = text(&greedy_ids(turn1, 3));
    let turn2 = format!("u: hi\na: {reply1}\nu: how are you\na:");
    let reply2 = text(&greedy_ids(&turn2, 3));
    assert_eq!(out, format!("{reply1}\n{reply2}\n"));

    let prefills: Vec<&str> = err.lines().filter(|l| l.starts_with("prefill: ")).collect();
    assert_eq!(prefills.len(), 2, "{err}");
    let (n1, n2) = (tok.encode(turn1).unwrap().len(), tok.encode(&turn2).unwrap().len());
    assert!(prefills[0].starts_with(&format!("prefill: {n1} tokens")), "{err}");
    // The cache holds turn 1's prompt and reply: turn 2 prefills less
    // than its whole prompt.
    let second: usize = prefills[1]["prefill: ".len()..].split(' ').next().unwrap().parse().unwrap();
    assert!(second < n2, "the second turn prefilled {second} of {n2} tokens: nothing was reused\n{err}");
}
