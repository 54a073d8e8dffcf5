//! Chat templates rendered by a child process (`rlx_decode::ChildRenderer`,
//! the decoder CLI's way): the same text as rendering in this process, the
//! same errors, and a template that would exhaust memory or time is an
//! error while the parent and its renderer go on. The child is the mock
//! decoder binary, whose `main` serves render requests as every decoder's
//! does.

use std::path::Path;
use std::time::Duration;

use rlx_decode::{ChatError, ChatTemplate, ChildRenderer, GenerationConfig, Message, RenderLimits};

const CHATML: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

fn template(source: &str) -> ChatTemplate {
    let config = GenerationConfig {
        chat_template: Some(source.into()),
        bos_token: Some("<s>".into()),
        eos_token: Some("</s>".into()),
        ..GenerationConfig::default()
    };
    ChatTemplate::new(&config).expect("the template compiles")
}

fn renderer(limits: RenderLimits) -> ChildRenderer {
    ChildRenderer::new(env!("CARGO_BIN_EXE_rlx-decode-mock"), limits)
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("Be brief."),
        Message::user("Héllo, 世界 \"quoted\" \\ and\nnewline"),
        Message::assistant("Hi."),
        Message::user("Bye"),
    ]
}

#[test]
fn the_child_renders_what_this_process_renders() {
    let mut child = renderer(RenderLimits::default());
    let llama2 = "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'].strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'].strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
    for source in [CHATML, llama2] {
        let t = template(source);
        for add in [true, false] {
            let here = t.render(&conversation(), add).unwrap();
            assert_eq!(child.render(&t, &conversation(), add).unwrap(), here);
        }
    }
    // A long conversation: larger than a pipe holds, each way.
    let t = template(CHATML);
    let long: Vec<Message> = (0..2000).map(|i| Message::user(format!("question {i} {}", "x".repeat(64)))).collect();
    assert_eq!(child.render(&t, &long, true).unwrap(), t.render(&long, true).unwrap());
}

#[test]
fn the_childs_errors_are_the_templates_errors() {
    let mut child = renderer(RenderLimits::default());
    let refusing = template("{{ raise_exception('roles must alternate') }}");
    let e = child.render(&refusing, &conversation(), true).unwrap_err();
    assert!(matches!(&e, ChatError::Render(m) if m.contains("roles must alternate")), "{e}");
    let endless = template("{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}");
    let e = child.render(&endless, &conversation(), true).unwrap_err();
    assert!(matches!(e, ChatError::OutOfFuel), "{e}");
}

/// A string doubled 40 times asks for 16 TiB within the fuel: in this
/// process that is an abort; through the child it is an error, and the
/// next rendering gets a new child.
#[test]
fn a_template_that_exhausts_memory_is_an_error_and_the_next_one_renders() {
    let mut child = renderer(RenderLimits::default());
    let doubling = template(
        "{% set ns = namespace(s='0123456789abcdef') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
    );
    let e = child.render(&doubling, &conversation(), true).unwrap_err();
    assert!(matches!(e, ChatError::TooLarge { limit } if limit == 64 << 20), "{e}");
    assert!(e.to_string().contains("needed more than 64 MiB"), "{e}");
    let t = template(CHATML);
    assert_eq!(child.render(&t, &conversation(), true).unwrap(), t.render(&conversation(), true).unwrap());
}

/// The fuzzer's input: a 62 MB repetition per message, concatenated.
#[test]
fn the_fuzzers_repeated_string_is_refused() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fuzz-regressions/tokenizer/chat_template_repeated_string_62mb.json");
    let text = std::fs::read_to_string(path).unwrap();
    let config = GenerationConfig::from_checkpoint("{}", None, Some(&text)).unwrap();
    let t = ChatTemplate::new(&config).unwrap();
    let e = renderer(RenderLimits::default()).render(&t, &conversation(), true).unwrap_err();
    assert!(matches!(e, ChatError::TooLarge { .. }), "{e}");
}

/// Within the memory limit, a loop copying an 8 MB string 100,000 times
/// (within the fuel) would run for minutes: the parent stops at the time
/// limit.
#[test]
fn a_template_that_runs_too_long_is_an_error() {
    let limits = RenderLimits { memory: 256 << 20, time: Duration::from_millis(500) };
    let mut child = renderer(limits);
    let slow = template(
        "{% set ns = namespace(s='x' * 8000000, n=0) %}{% for i in range(100000) %}{% set ns.n = (ns.s ~ 'y') | length %}{% endfor %}{{ ns.n }}",
    );
    let e = child.render(&slow, &conversation(), true).unwrap_err();
    assert!(matches!(e, ChatError::TooSlow { limit } if limit == limits.time), "{e}");
    let t = template(CHATML);
    assert_eq!(child.render(&t, &conversation(), true).unwrap(), t.render(&conversation(), true).unwrap());
}

#[cfg(unix)]
#[test]
fn a_program_that_is_not_a_renderer_is_an_error() {
    let e = ChildRenderer::new("/bin/true", RenderLimits::default())
        .render(&template(CHATML), &conversation(), true)
        .unwrap_err();
    assert!(matches!(&e, ChatError::Renderer(m) if m.contains("stopped without an answer")), "{e}");
    let e = ChildRenderer::new("/nonexistent/renderer", RenderLimits::default())
        .render(&template(CHATML), &conversation(), true)
        .unwrap_err();
    assert!(e.to_string().contains("cannot start `/nonexistent/renderer`"), "{e}");
}

/// minijinja folds constant expressions as it compiles, without fuel:
/// `4466 in 8963638737 * ['x']` compares nine billion items (the AFL
/// `tokenizer` target's hang). Making the template compiles nothing; the
/// child compiles it and is stopped at the time limit.
#[test]
fn a_template_that_compiles_for_ever_is_stopped_in_the_child() {
    let t = template("{{ 4466 in 8963638737 * ['x'] }}");
    let limits = RenderLimits { memory: 64 << 20, time: Duration::from_millis(500) };
    let e = renderer(limits).render(&t, &conversation(), true).unwrap_err();
    assert!(matches!(e, ChatError::TooSlow { .. }), "{e}");
}
