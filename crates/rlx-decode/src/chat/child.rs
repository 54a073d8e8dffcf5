//! Chat templates rendered in a child process, under memory and time
//! limits.
//!
//! A checkpoint's template is untrusted code. minijinja's fuel bounds the
//! instructions one rendering runs, but not the size of what they build:
//! `{% set ns.s = ns.s ~ ns.s %}` forty times asks for a terabyte, and a
//! failed allocation aborts the process; it cannot be caught as an error.
//! So a decoder binary renders in a copy of itself: [`ChildRenderer`]
//! starts its own executable with [`CHILD_ENV`] set and sends it one
//! request per rendering over a pipe. The child limits its address space
//! (Linux: `RLIMIT_AS`, its size at start plus [`RenderLimits::memory`])
//! and its CPU time per request (unix: `RLIMIT_CPU`), and the parent
//! stops waiting, and kills it, at [`RenderLimits::time`]. Whatever the
//! child dies of, the parent reports one error, starts a new child for the
//! next rendering, and goes on; the conversation is not lost.
//!
//! The binary's `main` must call [`serve_render_request`] first
//! (`rlx_decode::cli::main_with` does), so that the child renders instead
//! of running the program. Messages are framed as an 8-byte little-endian
//! length and that many bytes of JSON, each way.

use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use super::{ChatError, ChatTemplate, Message};
use crate::generation::GenerationConfig;

/// The environment variable that makes a decoder binary a template
/// renderer ([`serve_render_request`]).
pub const CHILD_ENV: &str = "RLX_DECODE_RENDER_CHAT";

/// The most stderr kept from a renderer (it explains how it died).
const STDERR_KEPT: usize = 16 << 10;

/// What one rendering in a child process may spend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderLimits {
    /// Bytes of memory beyond what the child holds when it starts.
    pub memory: u64,
    /// Wall-clock time of one rendering (a first one includes starting
    /// the child).
    pub time: Duration,
}

impl Default for RenderLimits {
    /// 64 MiB and 5 s. A conversation that fills a 131,072-token context
    /// is about half a megabyte of text and renders in milliseconds; the
    /// time leaves room for a loaded machine and an unoptimized build.
    fn default() -> Self {
        RenderLimits { memory: 64 << 20, time: Duration::from_secs(5) }
    }
}

/// Renders chat templates in a child process running `program` (a binary
/// whose `main` calls [`serve_render_request`] first): a template that
/// needs more memory or time than the limits is an error here, not an
/// abort or a hang of this process. The child is started on first use and
/// kept for the next renderings.
#[derive(Debug)]
pub struct ChildRenderer {
    program: PathBuf,
    limits: RenderLimits,
    running: Option<Running>,
}

/// A started renderer: its stdin, and its replies and stderr as they
/// arrive (read on threads of their own, so that a reply can be waited
/// for with a deadline).
#[derive(Debug)]
struct Running {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: JoinHandle<()>,
}

impl ChildRenderer {
    pub fn new(program: impl Into<PathBuf>, limits: RenderLimits) -> Self {
        ChildRenderer { program: program.into(), limits, running: None }
    }

    pub fn limits(&self) -> RenderLimits {
        self.limits
    }

    /// `template`'s prompt text of `messages`, as [`ChatTemplate::render`]
    /// gives it, rendered by the child.
    pub fn render(
        &mut self,
        template: &ChatTemplate,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, ChatError> {
        let request = json!({
            "generation": template.config.to_json(),
            "messages": messages.iter().map(|m| json!({ "role": m.role, "content": m.content })).collect::<Vec<_>>(),
            "add_generation_prompt": add_generation_prompt,
            "seconds": self.limits.time.as_secs_f64(),
        })
        .to_string();
        // A child that has died since its last reply (killed from outside,
        // say) fails the write: one fresh start is tried.
        let running = match self.running.take() {
            Some(mut r) => match write_frame(&mut r.stdin, request.as_bytes()) {
                Ok(()) => r,
                Err(_) => {
                    r.stop();
                    self.start_with(&request)?
                }
            },
            None => self.start_with(&request)?,
        };
        match running.replies.recv_timeout(self.limits.time) {
            Ok(reply) => {
                self.running = Some(running);
                answer(&reply)
            }
            Err(RecvTimeoutError::Timeout) => {
                running.stop();
                Err(ChatError::TooSlow { limit: self.limits.time })
            }
            Err(RecvTimeoutError::Disconnected) => Err(running.death(self.limits)),
        }
    }

    /// A new child, sent `request`.
    fn start_with(&self, request: &str) -> Result<Running, ChatError> {
        let mut r = self.start()?;
        match write_frame(&mut r.stdin, request.as_bytes()) {
            Ok(()) => Ok(r),
            // It stopped reading: it has ended, or must.
            Err(_) => Err(r.death(self.limits)),
        }
    }

    fn start(&self) -> Result<Running, ChatError> {
        let mut child = Command::new(&self.program)
            .env(CHILD_ENV, self.limits.memory.to_string())
            // The renderer multiplies no matrices: no BLAS worker threads.
            .env("OPENBLAS_NUM_THREADS", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| ChatError::Renderer(format!("cannot start `{}`: {e}", self.program.display())))?;
        let (Some(stdin), Some(stdout), Some(mut stderr_pipe)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ChatError::Renderer("the renderer's pipes were not opened".into()));
        };
        let (send, replies) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            while let Ok(Some(reply)) = read_frame(&mut stdout) {
                if send.send(reply).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stderr_pipe.read(&mut chunk) {
                if let Ok(mut kept) = kept.lock() {
                    let room = STDERR_KEPT.saturating_sub(kept.len());
                    kept.extend_from_slice(&chunk[..n.min(room)]);
                }
            }
        });
        Ok(Running { child, stdin, replies, stderr, stderr_reader })
    }
}

impl Drop for ChildRenderer {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
    }
}

impl Running {
    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Why the child stopped answering, as the user should hear it.
    fn death(mut self, limits: RenderLimits) -> ChatError {
        // It closed a pipe; one that has not exited yet (a renderer that
        // closed its stdout and went on) must not be waited for forever.
        let _ = self.child.kill();
        let status = self.child.wait();
        let _ = self.stderr_reader.join();
        let stderr = self.stderr.lock().map(|s| String::from_utf8_lossy(&s).into_owned()).unwrap_or_default();
        // Rust's allocation failure message, printed before it aborts.
        if stderr.contains("memory allocation of") {
            return ChatError::TooLarge { limit: limits.memory };
        }
        #[cfg(unix)]
        if let Ok(status) = &status {
            use std::os::unix::process::ExitStatusExt;
            if status.signal() == Some(libc::SIGXCPU) {
                return ChatError::TooSlow { limit: limits.time };
            }
        }
        let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        let detail = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        ChatError::Renderer(format!("the renderer process stopped without an answer ({status}): {detail}"))
    }
}

fn write_frame(to: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    to.write_all(&(bytes.len() as u64).to_le_bytes())?;
    to.write_all(bytes)?;
    to.flush()
}

/// The next frame; `None` at the end of the stream.
fn read_frame(from: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 8];
    match from.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = usize::try_from(u64::from_le_bytes(len))
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "a frame too long"))?;
    let mut bytes = Vec::new();
    from.take(len as u64).read_to_end(&mut bytes)?;
    if bytes.len() != len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Some(bytes))
}

/// The child's reply: the text, or the error it rendered into.
fn answer(reply: &[u8]) -> Result<String, ChatError> {
    let reply: Value = serde_json::from_slice(reply)
        .map_err(|_| ChatError::Renderer("the renderer process answered something else than JSON".into()))?;
    if let Some(text) = reply.get("text").and_then(Value::as_str) {
        return Ok(text.to_owned());
    }
    let message = reply.get("message").and_then(Value::as_str).unwrap_or_default().to_owned();
    Err(match reply.get("error").and_then(Value::as_str) {
        Some("template") => ChatError::Template(message),
        Some("render") => ChatError::Render(message),
        Some("fuel") => ChatError::OutOfFuel,
        Some("no_template") => ChatError::NoTemplate,
        _ => ChatError::Renderer(message),
    })
}

/// When this process was started as a template renderer (by
/// [`ChildRenderer`]): limits its memory, answers every request on stdin
/// until its end, and ends the process. Returns, doing nothing, in any
/// other process: call it first in `main`.
pub fn serve_render_request() {
    let Some(memory) = std::env::var_os(CHILD_ENV) else { return };
    if let Some(memory) = memory.to_str().and_then(|m| m.parse::<u64>().ok()) {
        limit_memory(memory);
    }
    let (mut input, mut out) = (std::io::stdin().lock(), std::io::stdout().lock());
    while let Ok(Some(request)) = read_frame(&mut input) {
        let reply = match serve(&request) {
            Ok(text) => json!({ "text": text }),
            Err(e) => {
                let kind = match &e {
                    ChatError::Template(_) => "template",
                    ChatError::Render(_) => "render",
                    ChatError::OutOfFuel => "fuel",
                    ChatError::NoTemplate => "no_template",
                    _ => "other",
                };
                let message = match e {
                    ChatError::Template(m) | ChatError::Render(m) | ChatError::Renderer(m) => m,
                    other => other.to_string(),
                };
                json!({ "error": kind, "message": message })
            }
        };
        if write_frame(&mut out, reply.to_string().as_bytes()).is_err() {
            break;
        }
    }
    end_process(0);
}

/// Ends the renderer without the exit handlers: a library's (OpenBLAS
/// joins its worker threads) may wait on a thread the memory limit stalls.
fn end_process(code: i32) -> ! {
    #[cfg(unix)]
    // SAFETY: `_exit` ends the process; every answer is already flushed.
    unsafe {
        libc::_exit(code)
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}

fn serve(request: &[u8]) -> Result<String, ChatError> {
    let bad = |what: &str| ChatError::Renderer(format!("a bad render request: {what}"));
    let request: Value = serde_json::from_slice(request).map_err(|_| bad("not JSON"))?;
    let seconds = request.get("seconds").and_then(Value::as_f64).ok_or_else(|| bad("no time limit"))?;
    limit_cpu(seconds);
    let generation = request.get("generation").and_then(Value::as_str).ok_or_else(|| bad("no generation config"))?;
    let config = GenerationConfig::from_json(generation).map_err(|e| bad(&e.to_string()))?;
    let mut messages = Vec::new();
    for m in request.get("messages").and_then(Value::as_array).ok_or_else(|| bad("no messages"))? {
        let content = m.get("content").and_then(Value::as_str).ok_or_else(|| bad("a message without content"))?;
        messages.push(match m.get("role").and_then(Value::as_str) {
            Some("system") => Message::system(content),
            Some("user") => Message::user(content),
            Some("assistant") => Message::assistant(content),
            _ => return Err(bad("a message without a known role")),
        });
    }
    let add_generation_prompt = request.get("add_generation_prompt").and_then(Value::as_bool).unwrap_or(true);
    ChatTemplate::new(&config)?.render(&messages, add_generation_prompt)
}

/// Caps this process's address space at its current size plus `memory`.
/// Linux only: other systems do not enforce `RLIMIT_AS` (there the child
/// still keeps a failure away from the parent).
fn limit_memory(memory: u64) {
    #[cfg(target_os = "linux")]
    if let Some(size) = address_space() {
        set_limit(libc::RLIMIT_AS, size.saturating_add(memory));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = memory;
}

/// Caps this process's CPU time at what it has used plus `seconds`,
/// rounded up, plus one: the parent's clock is the limit, this one stops a
/// renderer whose parent is gone.
fn limit_cpu(seconds: f64) {
    #[cfg(unix)]
    {
        // SAFETY: an all-zero rusage is a valid value for getrusage to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes the struct it is given.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
            return;
        }
        let used = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1).max(0) as u64;
        set_limit(libc::RLIMIT_CPU, used + seconds.ceil().max(0.0) as u64 + 1);
    }
    #[cfg(not(unix))]
    let _ = seconds;
}

/// The type of `setrlimit`'s resource argument.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(all(unix, not(all(target_os = "linux", target_env = "gnu"))))]
type Resource = libc::c_int;

/// Sets the soft limit of `resource`, keeping the hard one.
#[cfg(unix)]
fn set_limit(resource: Resource, value: u64) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read or write the struct they are
    // given; a failure leaves the limit as it was.
    unsafe {
        if libc::getrlimit(resource, &mut limit) != 0 {
            return;
        }
        limit.rlim_cur = (value as libc::rlim_t).min(limit.rlim_max);
        libc::setrlimit(resource, &limit);
    }
}

/// This process's address space in bytes (`/proc/self/statm`, in pages).
#[cfg(target_os = "linux")]
fn address_space() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages.saturating_mul(u64::try_from(page).ok()?))
}
