//! What the CLI answers when a server asks the client: its roots (the project directory) and,
//! when stdin is a terminal, elicitation — a form asked field by field on the terminal, or a URL
//! opened in the browser. Sampling is never declared (the CLI has no model). When stdin is not
//! a terminal nothing interactive is declared, so servers do not wait for a person who is not
//! there.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write as _};
use std::path::Path;

use plexus::client::{ClientHandler, ServerRequestContext};
use plexus::jsonrpc::{ErrorCode, ErrorObject};
use plexus::protocol::{
    ClientCapabilities, ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitResult, ElicitationCapability, JsonObject, ListRootsResult, Root, RootsCapability,
};
use plexus::tools::UrlElicitationHandler;

use crate::form;
use crate::terminal::{self, read_answer};

/// How many times a field is asked again after an answer that does not fit.
const MAX_TRIES: usize = 5;

/// The CLI's answers to the servers' requests.
pub(crate) struct Interactive {
    roots: Vec<Root>,
    terminal: bool,
    /// One question on the terminal at a time.
    asking: tokio::sync::Mutex<()>,
}

impl Interactive {
    /// Roots: `project`; elicitation only when stdin is a terminal (the questions go to stderr).
    pub(crate) fn new(project: &Path) -> Interactive {
        let roots = url::Url::from_directory_path(project)
            .map(|uri| {
                let name = project.file_name().map(|name| name.to_string_lossy().into_owned());
                vec![Root::new(uri.to_string(), name)]
            })
            .unwrap_or_default();
        Interactive {
            roots,
            terminal: std::io::stdin().is_terminal(),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether a person can be asked (stdin is a terminal).
    pub(crate) fn is_interactive(&self) -> bool {
        self.terminal
    }

    /// Asks on the terminal, one question at a time, with the progress display out of the way.
    async fn ask<T: Send + 'static>(&self, question: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let _turn = self.asking.lock().await;
        let _paused = crate::progress::pause_call_bar();
        tokio::task::spawn_blocking(question).await.ok()
    }
}

#[async_trait::async_trait]
impl ClientHandler for Interactive {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            elicitation: self.terminal.then(|| ElicitationCapability {
                form: Some(JsonObject::new()),
                url: Some(JsonObject::new()),
                ..ElicitationCapability::default()
            }),
            ..ClientCapabilities::default()
        }
    }

    async fn list_roots(&self, _context: ServerRequestContext) -> Result<ListRootsResult, ErrorObject> {
        let roots = self.roots.clone();
        Ok(ListRootsResult {
            roots,
            ..ListRootsResult::default()
        })
    }

    async fn elicit(
        &self,
        params: ElicitRequestParams,
        context: ServerRequestContext,
    ) -> Result<ElicitResult, ErrorObject> {
        let server = context.server;
        match params {
            ElicitRequestParams::Form(form) => Ok(self
                .ask(move || ask_form(&server, &form))
                .await
                .unwrap_or_else(ElicitResult::cancel)),
            // Consent to open the URL is the answer; the server says when it is done.
            ElicitRequestParams::Url(url) => {
                let action = self
                    .ask(move || ask_url(&server, &url, false))
                    .await
                    .unwrap_or(ElicitAction::Cancel);
                Ok(match action {
                    ElicitAction::Accept => ElicitResult::accept(None),
                    ElicitAction::Decline => ElicitResult::decline(),
                    ElicitAction::Cancel => ElicitResult::cancel(),
                })
            }
            ElicitRequestParams::Unknown(_) => Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                "plexus does not know this elicitation mode",
            )),
        }
    }
}

#[async_trait::async_trait]
impl UrlElicitationHandler for Interactive {
    /// The call waits until the user says they are done (or the server reports it). Only set
    /// when a person can be asked.
    async fn open(&self, server: &str, elicitation: &ElicitRequestUrlParams) -> ElicitAction {
        let (server, elicitation) = (server.to_owned(), elicitation.clone());
        self.ask(move || ask_url(&server, &elicitation, true))
            .await
            .unwrap_or(ElicitAction::Cancel)
    }
}

/// Asks each field of `form` in turn, then whether to send the answers. End of input cancels.
fn ask_form(server: &str, form: &ElicitRequestFormParams) -> ElicitResult {
    eprintln!(
        "\nserver {:?} asks: {}",
        terminal::line(server),
        terminal::block(&form.message)
    );
    let required = form.requested_schema.required.clone().unwrap_or_default();
    let mut content = BTreeMap::new();
    for (name, schema) in &form.requested_schema.properties {
        let required = required.contains(name);
        let mut tries = 0;
        loop {
            eprint!("  {}", form::prompt(name, schema, required));
            let _ = std::io::stderr().flush();
            let Ok(Some(answer)) = read_answer(false) else {
                eprintln!();
                return ElicitResult::cancel();
            };
            match form::parse(schema, required, &answer) {
                Ok(Some(value)) => {
                    content.insert(name.clone(), value);
                    break;
                }
                Ok(None) => break,
                Err(reason) => {
                    tries += 1;
                    if tries == MAX_TRIES {
                        eprintln!("  {reason}; giving up on the form");
                        return ElicitResult::cancel();
                    }
                    eprintln!("  {reason}");
                }
            }
        }
    }
    match confirm("send these answers? [Y]es, [n]o (decline), [c]ancel: ") {
        ElicitAction::Accept => ElicitResult::accept(Some(content)),
        ElicitAction::Decline => ElicitResult::decline(),
        ElicitAction::Cancel => ElicitResult::cancel(),
    }
}

/// Shows the URL a server wants the user at; with their consent, opens it in the browser. When
/// `wait` is set (a call that cannot go on before), waits for them to say they are done.
fn ask_url(server: &str, elicitation: &ElicitRequestUrlParams, wait: bool) -> ElicitAction {
    // What is shown, checked and opened is the URL as parsed: its normal form (leading controls
    // and spaces gone, bidi controls in the path percent-encoded, the host in punycode), never
    // the text as the server sent it.
    let parsed = url::Url::parse(&elicitation.url);
    let shown = parsed.as_ref().map_or(elicitation.url.as_str(), url::Url::as_str);
    eprintln!(
        "\nserver {:?} asks you to open a page: {}\n\n    {}\n",
        terminal::line(server),
        terminal::block(&elicitation.message),
        terminal::line(shown)
    );
    let safe = |url: &url::Url| {
        url.scheme() == "https"
            || (url.scheme() == "http"
                && url
                    .host_str()
                    .is_some_and(|host| host == "localhost" || host == "127.0.0.1" || host == "[::1]"))
    };
    let url = match &parsed {
        Ok(url) if safe(url) => url,
        _ => {
            terminal::say("the URL is not https (nor http on this machine); it is not opened");
            return ElicitAction::Decline;
        }
    };
    let host = url.host_str().unwrap_or_default();
    let question = format!(
        "open it (on {}) in the browser? [Y]es, [n]o (decline), [c]ancel: ",
        terminal::line(host)
    );
    let action = confirm(&question);
    if action != ElicitAction::Accept {
        return action;
    }
    if let Err(reason) = crate::login::open_browser(url.as_str()) {
        terminal::say(format_args!(
            "could not open a browser ({reason}); open the URL above yourself"
        ));
    }
    if !wait {
        return ElicitAction::Accept;
    }
    confirm("press Enter when you are done there ([c]ancel): ")
}

/// A yes / no / cancel question; Enter is yes, end of input cancels.
fn confirm(question: &str) -> ElicitAction {
    loop {
        eprint!("{question}");
        let _ = std::io::stderr().flush();
        let Ok(Some(answer)) = read_answer(false) else {
            eprintln!();
            return ElicitAction::Cancel;
        };
        match answer.trim().to_ascii_lowercase().as_str() {
            "" | "y" | "yes" => return ElicitAction::Accept,
            "n" | "no" => return ElicitAction::Decline,
            "c" | "cancel" => return ElicitAction::Cancel,
            _ => {}
        }
    }
}
