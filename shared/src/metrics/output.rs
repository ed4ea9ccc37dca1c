//! Where metric lines go: standard output (CloudWatch Logs, from Lambda;
//! the dev server's log locally), or where a test process redirects them.

use std::io::Write;
use std::sync::OnceLock;

type Hook = Box<dyn Fn(&str) + Send + Sync>;

static REDIRECTED: OnceLock<Hook> = OnceLock::new();

/// From now on, every metric line of this process goes to `hook` instead
/// of standard output (a test run keeps them to read and check). False
/// when it already went elsewhere (the first redirection stays).
pub fn redirect(hook: impl Fn(&str) + Send + Sync + 'static) -> bool {
    REDIRECTED.set(Box::new(hook)).is_ok()
}

/// Writes `line`, whole (one write of the locked standard output: the
/// log lines written beside it stay apart). A failed write is dropped: a
/// metric never fails a request.
pub(super) fn write(mut line: String) {
    if let Some(hook) = REDIRECTED.get() {
        hook(&line);
        return;
    }
    line.push('\n');
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
}

/// Writes a log line that carries no metric to standard output, whole,
/// wherever metric lines were redirected.
pub(super) fn write_log(mut line: String) {
    line.push('\n');
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
}
