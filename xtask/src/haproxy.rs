//! HAProxy from Debian's packages, for the test of `plexus serve` replicas behind a load
//! balancer: `apt-get download` fetches the pinned packages (HAProxy and the libraries it needs
//! that a Debian system may lack) and `dpkg -x` unpacks them under `target/peers/haproxy/`, so
//! that nothing is installed on the machine and no root is needed. The test runs the binary
//! with `LD_LIBRARY_PATH` naming the unpacked libraries (the manifest gives both).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::peers::{PeersError, expect_success, io_error};

/// The packages unpacked, each at its pinned version (Debian 12's at the time of pinning). A
/// version the archive no longer holds (a point release replaced it) falls back to the archive's
/// current one of the same package, with a note: HAProxy 2.6 stays HAProxy 2.6 in a stable
/// release.
pub(crate) const PACKAGES: [(&str, &str); 4] = [
    ("haproxy", "2.6.12-1+deb12u3"),
    ("liblua5.3-0", "5.3.6-2"),
    ("libopentracing-c-wrapper0", "1.1.3-3+b1"),
    ("libopentracing1", "1.6.0-4"),
];

/// The longest one `apt-get download` may take.
const DOWNLOAD_LIMIT: Duration = Duration::from_secs(300);

/// What the tests need: the binary and the directory of its libraries.
pub(crate) struct Installed {
    pub(crate) binary: PathBuf,
    pub(crate) libraries: PathBuf,
}

/// Unpacks the packages under `dir/haproxy/` unless the binary is there already.
pub(crate) fn ensure(dir: &Path) -> Result<Installed, PeersError> {
    let home = dir.join("haproxy");
    let root = home.join("root");
    let installed = Installed {
        binary: root.join("usr").join("sbin").join("haproxy"),
        libraries: root
            .join("usr")
            .join("lib")
            .join(format!("{}-linux-gnu", std::env::consts::ARCH)),
    };
    let stamp = home.join("installed");
    let pins = describe();
    if installed.binary.exists() && fs::read_to_string(&stamp).ok().as_deref() == Some(pins.as_str()) {
        println!("haproxy: already unpacked in {}", home.display());
        return Ok(installed);
    }
    let downloads = home.join("debs");
    // A fresh unpacking: nothing of an earlier pin stays.
    let _ = fs::remove_dir_all(&home);
    fs::create_dir_all(&downloads).map_err(io_error(&downloads))?;
    for (package, version) in PACKAGES {
        let pinned = format!("{package}={version}");
        let mut download = Command::new("apt-get");
        download.args(["download", &pinned]).current_dir(&downloads);
        if expect_success(&mut download, DOWNLOAD_LIMIT).is_err() {
            println!("haproxy: {pinned} is no longer in the archive; taking its current version");
            let mut current = Command::new("apt-get");
            current.args(["download", package]).current_dir(&downloads);
            expect_success(&mut current, DOWNLOAD_LIMIT)?;
        }
    }
    let entries = fs::read_dir(&downloads).map_err(io_error(&downloads))?;
    for entry in entries {
        let path = entry.map_err(io_error(&downloads))?.path();
        if path.extension().is_some_and(|ext| ext == "deb") {
            let mut unpack = Command::new("dpkg");
            unpack.arg("-x").arg(&path).arg(&root);
            expect_success(&mut unpack, DOWNLOAD_LIMIT)?;
        }
    }
    let mut version = Command::new(&installed.binary);
    version.arg("-v").env("LD_LIBRARY_PATH", &installed.libraries);
    expect_success(&mut version, DOWNLOAD_LIMIT)?;
    fs::write(&stamp, &pins).map_err(io_error(&stamp))?;
    Ok(installed)
}

/// The pins, one `package=version` per line (also the stamp of an unpacking).
pub(crate) fn describe() -> String {
    let mut text = String::new();
    for (package, version) in PACKAGES {
        let _ = writeln!(text, "{package}={version} (Debian, unpacked)");
    }
    text
}
