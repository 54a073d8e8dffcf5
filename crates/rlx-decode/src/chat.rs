//! Conversations rendered with the checkpoint's chat template.
//!
//! Hugging Face checkpoints ship their prompt format as a Jinja template
//! (`tokenizer_config.json`'s `chat_template`). It is rendered here with
//! `minijinja` and the variables `transformers`' `apply_chat_template`
//! passes: `messages` (a list of `{role, content}`),
//! `add_generation_prompt`, `bos_token` and `eos_token`, plus the
//! `raise_exception` function templates call to refuse a conversation. The
//! Python string methods templates use (`.strip()`, `.startswith()`, ...)
//! come from `minijinja-contrib`'s `pycompat`.
//!
//! Fuel bounds the instructions of a rendering, not the memory it takes:
//! [`ChatTemplate::render`] trusts the template that far, and
//! [`ChildRenderer`] ([`child`]) bounds both, as the decoder CLI
//! renders.

mod child;

pub use child::{serve_render_request, ChildRenderer, RenderLimits, CHILD_ENV};

use std::sync::OnceLock;

use minijinja::{context, Environment, ErrorKind};

use crate::generation::GenerationConfig;

/// One turn of a conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Message { role: "system", content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Message { role: "user", content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Message { role: "assistant", content: content.into() }
    }
}

/// Template instructions one rendering may run. ChatML costs under a
/// hundred per message (a 10,000-message conversation fits; the test
/// renders 1,000), while a template of nested loops (`range(100000)`
/// inside `range(100000)`) would otherwise run for hours: past the limit
/// it is an error.
pub const CHAT_FUEL: u64 = 1_000_000;

/// Why a conversation could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("this model has no chat template (its tokenizer_config.json had no `chat_template` when it was imported): use --prompt")]
    NoTemplate,
    #[error("the chat template does not compile: {0}")]
    Template(String),
    #[error("the chat template refused the conversation: {0}")]
    Render(String),
    #[error(
        "the chat template ran more than {CHAT_FUEL} instructions for this conversation: it is refused as endless"
    )]
    OutOfFuel,
    #[error(
        "the chat template needed more than {} MiB for this conversation: it is refused",
        limit >> 20
    )]
    TooLarge { limit: u64 },
    #[error("the chat template ran longer than {limit:?} for this conversation: it is refused")]
    TooSlow { limit: std::time::Duration },
    #[error("the chat template could not be rendered: {0}")]
    Renderer(String),
}

/// A chat template, compiled when it first renders.
///
/// Compiling runs template code too: minijinja folds constant expressions
/// as it compiles (`4466 in 8963638737 * ['x']` walks nine billion
/// items), without fuel. So nothing is compiled before the rendering, and
/// a [`ChildRenderer`] compiles in its child process, under its limits.
pub struct ChatTemplate {
    compiled: OnceLock<Result<Environment<'static>, String>>,
    bos_token: String,
    eos_token: String,
    /// The template's source, and what [`ChildRenderer`] sends the
    /// renderer process.
    config: GenerationConfig,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate").field("bos_token", &self.bos_token).field("eos_token", &self.eos_token).finish()
    }
}

impl ChatTemplate {
    /// The template of `config` (not compiled yet: a template that does
    /// not compile is an error of its first rendering).
    pub fn new(config: &GenerationConfig) -> Result<Self, ChatError> {
        if config.chat_template.is_none() {
            return Err(ChatError::NoTemplate);
        }
        Ok(ChatTemplate {
            compiled: OnceLock::new(),
            bos_token: config.bos_token.clone().unwrap_or_default(),
            eos_token: config.eos_token.clone().unwrap_or_default(),
            config: GenerationConfig { eos_token_ids: Vec::new(), ..config.clone() },
        })
    }

    /// The compiled template, compiled on first use in this process.
    fn environment(&self) -> Result<&Environment<'static>, ChatError> {
        self.compiled
            .get_or_init(|| {
                let source = self.config.chat_template.clone().unwrap_or_default();
                let mut env = Environment::new();
                minijinja_contrib::add_to_environment(&mut env);
                env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
                // Templates keep their own whitespace control, as in
                // `transformers` (which sets trim_blocks and lstrip_blocks).
                env.set_trim_blocks(true);
                env.set_lstrip_blocks(true);
                env.set_fuel(Some(CHAT_FUEL));
                env.add_function("raise_exception", |msg: String| -> Result<String, minijinja::Error> {
                    Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
                });
                env.add_template_owned("chat", source).map(|()| env).map_err(|e| describe(&e))
            })
            .as_ref()
            .map_err(|e| ChatError::Template(e.clone()))
    }

    /// The prompt text of `messages`, ending with the opening of the
    /// assistant's turn when `add_generation_prompt`, rendered in this
    /// process: at most [`CHAT_FUEL`] instructions, but the memory the
    /// template builds strings in is not bounded (a hostile template can
    /// run the process out of memory, an abort); see [`ChildRenderer`].
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String, ChatError> {
        let messages: Vec<_> =
            messages.iter().map(|m| context! { role => m.role, content => m.content.as_str() }).collect();
        let template = self.environment()?.get_template("chat").map_err(|e| ChatError::Template(describe(&e)))?;
        template
            .render(context! {
                messages => messages,
                add_generation_prompt => add_generation_prompt,
                bos_token => self.bos_token.as_str(),
                eos_token => self.eos_token.as_str(),
            })
            .map_err(|e| match e.kind() {
                ErrorKind::OutOfFuel => ChatError::OutOfFuel,
                _ => ChatError::Render(describe(&e)),
            })
    }
}

/// The error and its causes on one line (minijinja keeps the template's
/// message as the detail of an `InvalidOperation`).
fn describe(e: &minijinja::Error) -> String {
    let mut text = match e.detail() {
        Some(detail) if e.kind() == ErrorKind::InvalidOperation => detail.to_string(),
        _ => e.to_string(),
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ChatML template SmolLM and Qwen ship (shortened only in its
    /// default system prompt).
    const CHATML: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    fn config(template: &str) -> GenerationConfig {
        GenerationConfig {
            chat_template: Some(template.into()),
            bos_token: Some("<s>".into()),
            eos_token: Some("</s>".into()),
            ..GenerationConfig::default()
        }
    }

    #[test]
    fn chatml_renders_as_transformers_does() {
        let t = ChatTemplate::new(&config(CHATML)).unwrap();
        let text = t.render(&[Message::user("Hi!")], true).unwrap();
        assert_eq!(
            text,
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n"
        );
        let with_system = t.render(&[Message::system("Be brief."), Message::user("Hi!")], false).unwrap();
        assert_eq!(with_system, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n");
    }

    #[test]
    fn llama2_style_templates_use_bos_python_methods_and_raise_exception() {
        let llama2 = "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'].strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'].strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
        let t = ChatTemplate::new(&config(llama2)).unwrap();
        let text =
            t.render(&[Message::user("  Hi  "), Message::assistant("Hello."), Message::user("Bye")], true).unwrap();
        assert_eq!(text, "<s>[INST] Hi [/INST] Hello. </s>[INST] Bye [/INST]");
        let err = t.render(&[Message::assistant("first")], true).unwrap_err().to_string();
        assert!(err.contains("Conversation roles must alternate"), "{err}");
    }

    #[test]
    fn a_missing_or_broken_template_is_a_clear_error() {
        let none = ChatTemplate::new(&GenerationConfig::default()).unwrap_err().to_string();
        assert!(none.contains("no chat template"), "{none}");
        let broken = ChatTemplate::new(&config("{% for m in messages %}")).unwrap();
        let e = broken.render(&[Message::user("Hi!")], true).unwrap_err().to_string();
        assert!(e.starts_with("the chat template does not compile"), "{e}");
    }

    /// A template of nested loops renders 10^10 iterations: it runs out of
    /// fuel and is an error, quickly, while a long real conversation fits.
    #[test]
    fn an_endless_template_is_refused_and_a_long_conversation_is_not() {
        let nested = "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}";
        let t = ChatTemplate::new(&config(nested)).unwrap();
        let start = std::time::Instant::now();
        let e = t.render(&[Message::user("Hi!")], true).unwrap_err();
        assert!(matches!(e, ChatError::OutOfFuel), "{e}");
        assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
        let t = ChatTemplate::new(&config(CHATML)).unwrap();
        let conversation: Vec<Message> = (0..1000)
            .map(|i| if i % 2 == 0 { Message::user(format!("question {i}")) } else { Message::assistant("answer") })
            .collect();
        let text = t.render(&conversation, true).unwrap();
        assert!(text.ends_with("<|im_start|>assistant\n"));
    }
}
