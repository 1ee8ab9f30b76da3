//! The test server's remote modes run in the test process (its library API) on 127.0.0.1, on a
//! runtime of their own, so that the `plexus` binary connects to them over real sockets.

use clap::Parser;
use plexus_testserver::{Cli, Command, RemoteServer};

/// Runs `plexus-testserver http ARGS…` on a runtime of its own, for as long as the guard lives.
pub struct Remote {
    server: Option<RemoteServer>,
    runtime: tokio::runtime::Runtime,
}

impl Remote {
    pub fn http(args: &[&str]) -> Remote {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let argv = ["plexus-testserver", "http"].into_iter().chain(args.iter().copied());
        let Command::Http(options) = Cli::parse_from(argv).command else {
            panic!("not the http mode")
        };
        let server = runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            RemoteServer::http(listener, options).unwrap()
        });
        Remote {
            server: Some(server),
            runtime,
        }
    }

    pub fn url(&self) -> String {
        self.server.as_ref().unwrap().url().to_string()
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

impl Remote {
    /// The running server.
    pub fn server(&self) -> &RemoteServer {
        self.server.as_ref().unwrap()
    }
}
