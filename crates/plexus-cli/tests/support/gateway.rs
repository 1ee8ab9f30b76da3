//! `plexus serve --http` for the tests: started on a free port, waited for, and killed when
//! dropped (a failing test leaves none behind).

use std::io::Read as _;
use std::net::{IpAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::Workspace;

/// A `plexus serve --http` process, killed when dropped.
pub struct HttpGateway(pub std::process::Child);

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `plexus serve --http HOST:PORT` of `ws` on a free port (of `host` when it is an
/// address, else of 127.0.0.1), with `env` and the `extra` arguments, and returns it with its
/// `HOST:PORT` once it accepts connections (within 30 s; it ending first fails the test with its
/// stderr).
pub fn serve_http(ws: &Workspace, host: &str, env: &[(&str, &str)], extra: &[&str]) -> (HttpGateway, String) {
    let bind: IpAddr = host.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let port = TcpListener::bind((bind, 0)).unwrap().local_addr().unwrap().port();
    let address = format!("{host}:{port}");
    let mut arguments = vec!["serve", "--http", &address];
    arguments.extend_from_slice(extra);
    let mut command = ws.command(ws.path(), &arguments);
    command
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = HttpGateway(command.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect((bind, port)).is_err() {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut stderr = String::new();
            child.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
            panic!("plexus serve --http {address} ended ({status}): {stderr}");
        }
        assert!(Instant::now() < deadline, "the gateway did not listen on {address}");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, address)
}
