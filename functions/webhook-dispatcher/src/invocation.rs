//! What the dispatcher knows of the Lambda invocation it serves: the X-Ray
//! trace its spans go under and its lines name, and its request id.

/// What ties an invocation to its trace: Lambda's X-Ray trace header and
/// its request id (none when the dev server's poller calls).
#[derive(Clone, Debug, Default)]
pub struct Invocation {
    pub trace_header: Option<String>,
    pub request_id: Option<String>,
}

impl Invocation {
    /// Lambda's context of an invocation.
    pub fn of(context: &lambda_runtime::Context) -> Self {
        Invocation {
            trace_header: context.xray_trace_id.clone(),
            request_id: Some(context.request_id.clone()).filter(|id| !id.is_empty()),
        }
    }

    /// The trace's root, when its header is well formed.
    pub fn trace_id(&self) -> Option<String> {
        self.trace_header
            .as_deref()
            .and_then(shared::telemetry::traces::root)
    }
}

tokio::task_local! {
    /// The invocation being served, for the lines written deep in it (an
    /// attempt's).
    static CURRENT: Invocation;
}

impl Invocation {
    /// Runs `work` as this invocation's.
    pub(crate) async fn scope<F: std::future::Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, work).await
    }

    /// The invocation being served (none outside one).
    pub(crate) fn current() -> Invocation {
        CURRENT.try_with(Clone::clone).unwrap_or_default()
    }
}
