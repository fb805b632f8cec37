//! Child processes of the control plane: spawning, logs, clean-up.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::Error;

/// One running control-plane process; killed when dropped.
#[derive(Debug)]
pub(crate) struct Proc {
    pub(crate) name: &'static str,
    child: Child,
    pub(crate) log: PathBuf,
    /// How it was started, to start it again the same way.
    recipe: Recipe,
}

/// A command's program, arguments and folder (a `Command` cannot be cloned).
#[derive(Debug, Clone)]
struct Recipe {
    program: std::ffi::OsString,
    args: Vec<std::ffi::OsString>,
    dir: Option<PathBuf>,
}

impl Recipe {
    fn of(cmd: &Command) -> Self {
        Self {
            program: cmd.get_program().to_owned(),
            args: cmd.get_args().map(ToOwned::to_owned).collect(),
            dir: cmd.get_current_dir().map(Path::to_path_buf),
        }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        if let Some(dir) = &self.dir {
            cmd.current_dir(dir);
        }
        cmd
    }
}

impl Proc {
    /// Starts `cmd` with stdout and stderr going to `log`.
    pub(crate) fn spawn(name: &'static str, cmd: Command, log: PathBuf) -> Result<Self, Error> {
        Self::spawn_to(name, cmd, log, false)
    }

    /// As [`spawn`](Self::spawn), appending to `log`: a second try keeps the first's story.
    pub(crate) fn spawn_appending(name: &'static str, cmd: Command, log: PathBuf) -> Result<Self, Error> {
        Self::spawn_to(name, cmd, log, true)
    }

    fn spawn_to(name: &'static str, cmd: Command, log: PathBuf, append: bool) -> Result<Self, Error> {
        let recipe = Recipe::of(&cmd);
        let child = start(name, cmd, &log, append)?;
        Ok(Self {
            name,
            child,
            log,
            recipe,
        })
    }

    /// Kills the process and starts it again with the same command, appending to its log.
    pub(crate) fn restart(&mut self) -> Result<(), Error> {
        self.kill();
        self.child = start(self.name, self.recipe.command(), &self.log, true)?;
        Ok(())
    }

    /// From now on, [`restart`](Self::restart) starts it with `new` for the first
    /// argument that was `old`: a process that chose its own port starts again on the
    /// one it got.
    pub(crate) fn replace_arg(&mut self, old: &str, new: &str) {
        if let Some(arg) = self.recipe.args.iter_mut().find(|a| *a == old) {
            *arg = new.into();
        }
    }

    /// Stops the process (`SIGSTOP`), returning once every thread has stopped: a hung
    /// peer, not a dead one.
    pub(crate) fn pause(&self) -> Result<(), Error> {
        self.signal("STOP")?;
        self.wait_stopped()
    }

    /// Lets a [paused](Self::pause) process go on (`SIGCONT`).
    pub(crate) fn resume(&self) -> Result<(), Error> {
        self.signal("CONT")
    }

    fn signal(&self, signal: &str) -> Result<(), Error> {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .map_err(|source| Error::Io {
                context: format!("sending SIG{signal} to {}", self.name),
                source,
            })?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::Io {
                context: format!("sending SIG{signal} to {}", self.name),
                source: io::Error::other(format!("kill exited with {status}")),
            })
        }
    }

    /// Waits until every thread of the process has stopped: `kill` returns once the
    /// signal is sent, not once every thread has taken it, and a test that pauses a
    /// peer counts on its silence from the next line on. A process that has exited
    /// never shows stopped: an error after 10 s.
    fn wait_stopped(&self) -> Result<(), Error> {
        let tasks = PathBuf::from(format!("/proc/{}/task", self.child.id()));
        let stopped = || -> io::Result<bool> {
            for task in std::fs::read_dir(&tasks)? {
                let stat = std::fs::read_to_string(task?.path().join("stat"))?;
                // `pid (comm) S ...`: the state follows the last `)` (comm may hold one).
                let state = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.trim_start().chars().next());
                if !matches!(state, Some('T' | 't')) {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match stopped() {
                Ok(true) => return Ok(()),
                Ok(false) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Ok(false) => {
                    return Err(Error::Timeout {
                        what: format!("{} to stop after SIGSTOP", self.name),
                        after: std::time::Duration::from_secs(10),
                    });
                }
                Err(source) => {
                    return Err(Error::Io {
                        context: format!("reading the state of {} in {}", self.name, tasks.display()),
                        source,
                    });
                }
            }
        }
    }
}

/// Starts `cmd` with its output in `log` (appended to, or truncated), in its own
/// process group, dying with this process.
fn start(name: &'static str, mut cmd: Command, log: &Path, append: bool) -> Result<Child, Error> {
    let io_err = |context: String| move |source| Error::Io { context, source };
    let out = File::options()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(log)
        .map_err(io_err(format!("creating {}", log.display())))?;
    let err = out.try_clone().map_err(io_err(format!("opening {}", log.display())))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    {
        use std::os::unix::process::CommandExt;
        // Own process group: a Ctrl-C meant for the test runner or `up` does not reach the
        // children; the owner stops them.
        cmd.process_group(0);
    }
    die_with_parent(&mut cmd);
    spawn_from_long_lived_thread(cmd).map_err(io_err(format!("starting {name}")))
}

impl Proc {
    /// `Some(status)` if the process has exited.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last lines of the process's log.
    pub(crate) fn log_tail(&self) -> String {
        log_tail(&self.log, 40)
    }

    /// Kills the process (SIGKILL) and reaps it. The binaries do not fork, so the process is
    /// the whole of its process group.
    pub(crate) fn kill(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `lines` lines of a log file (or why it could not be read).
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// The TCP ports a process listens on, read from the kernel: the `socket:[inode]` links
/// of `/proc/<pid>/fd`, matched against the listening sockets of `/proc/<pid>/net/tcp`
/// and `tcp6`. A child told to listen on port 0 binds once and keeps the socket; this is
/// how its parent learns the port, with no window in which another process could take it.
///
/// Empty until the process has bound; on Linux only (`/proc`).
pub fn listening_ports(pid: u32) -> io::Result<Vec<u16>> {
    let mut inodes = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        // An fd closed while we read the folder is not an error: it was not a listener we
        // are waiting for.
        let Ok(target) = std::fs::read_link(fd?.path()) else {
            continue;
        };
        if let Some(inode) = target
            .to_str()
            .and_then(|t| t.strip_prefix("socket:["))
            .and_then(|t| t.strip_suffix(']'))
            .and_then(|t| t.parse::<u64>().ok())
        {
            inodes.push(inode);
        }
    }
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        match std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) {
            Ok(text) => ports.extend(listeners_in(&text, &inodes)),
            // A kernel without IPv6 has no `tcp6`.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    ports.sort_unstable();
    ports.dedup();
    Ok(ports)
}

/// The local ports of the listening sockets (state `0A`) of a `/proc/net/tcp` table
/// whose inode is one of `inodes`.
fn listeners_in(table: &str, inodes: &[u64]) -> Vec<u16> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
            if *state != "0A" || !inodes.contains(&inode.parse().ok()?) {
                return None;
            }
            u16::from_str_radix(local.rsplit_once(':')?.1, 16).ok()
        })
        .collect()
}

/// Waits until `proc`, started to listen on port 0, listens on exactly one TCP port, and
/// returns it; fails early if it exits.
pub(crate) async fn wait_for_listening_port(proc: &mut Proc, timeout: Duration) -> Result<u16, Error> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = proc.exited() {
            return Err(not_ready(proc, format!("exited with {status}")));
        }
        let ports = listening_ports(proc.child.id()).map_err(|source| Error::Io {
            context: format!("reading the sockets of {} (pid {})", proc.name, proc.child.id()),
            source,
        })?;
        match ports[..] {
            [port] => return Ok(port),
            [] if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            [] => return Err(not_ready(proc, format!("listening on no TCP port after {timeout:?}"))),
            _ => {
                return Err(not_ready(
                    proc,
                    format!("listening on TCP ports {ports:?}, expected one"),
                ));
            }
        }
    }
}

/// A port to name before anything listens on it, for a program that cannot choose its
/// own (kube-apiserver refuses `--secure-port=0`) or a test of a port recorded earlier:
/// random, from below the kernel's ephemeral range (`ip_local_port_range`), which port-0
/// binds and outgoing connections never take, so only a process that names this very
/// port can collide. It is not reserved by binding and releasing it (another process
/// could take it in between); the caller starts the program on it and, if that says
/// the address is in use, tries another.
pub fn random_port() -> Result<u16, Error> {
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u16>().ok());
    let (low, high) = port_range(ephemeral_start);
    let mut bytes = [0u8; 2];
    {
        use std::io::Read as _;
        File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|source| Error::Io {
                context: "reading /dev/urandom".into(),
                source,
            })?;
    }
    Ok(low + u16::from_le_bytes(bytes) % (high - low))
}

/// A loopback port nobody listens on, held for as long as the returned socket lives:
/// bound but not listening, so a connection to it is refused, and no other process can
/// bind it meanwhile (a port bound and released could be taken, and answer).
pub fn refusing_port() -> Result<(tokio::net::TcpSocket, u16), Error> {
    let held = || -> io::Result<_> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind((std::net::Ipv4Addr::LOCALHOST, 0).into())?;
        let port = socket.local_addr()?.port();
        Ok((socket, port))
    };
    held().map_err(|source| Error::Io {
        context: "holding a loopback port".into(),
        source,
    })
}

/// The ports `[low, high)` to choose from: 10000 up to the start of the ephemeral range,
/// or, if that range starts too low to leave room (or is unknown), all unprivileged ports.
fn port_range(ephemeral_start: Option<u16>) -> (u16, u16) {
    match ephemeral_start {
        Some(start) if start >= 11_000 => (10_000, start),
        _ => (1024, u16::MAX),
    }
}

/// Whether `proc` exited because `port` was taken: a Go server that cannot bind logs
/// `listen tcp 127.0.0.1:PORT: bind: address already in use` and exits. Only a process
/// that has exited counts, and only that exact address.
pub(crate) fn bind_failed(proc: &mut Proc, port: u16) -> bool {
    proc.exited().is_some()
        && std::fs::read(&proc.log).is_ok_and(|log| says_address_in_use(&String::from_utf8_lossy(&log), port))
}

pub(crate) fn says_address_in_use(log: &str, port: u16) -> bool {
    let needle = format!("listen tcp 127.0.0.1:{port}: bind: address already in use");
    log.lines().any(|line| line.contains(&needle))
}

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// Spawns `cmd` from a thread that lives as long as the process.
///
/// The parent-death signal (see [`die_with_parent`]) fires when the *thread* that forked the
/// child ends, not the process. Test threads and tokio's blocking threads come and go, so a
/// control plane kept in a `static` would be killed when the test that started it finished.
/// One long-lived spawner thread ties the children's lives to the whole process instead.
fn spawn_from_long_lived_thread(cmd: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("tiny-testenv-spawner".into())
            .spawn(move || {
                // Never returns: `tx` lives in the static.
                while let Ok((mut cmd, reply)) = rx.recv() {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .ok()
            .map(|_| tx)
    });
    let Some(spawner) = spawner else {
        // No thread could be made: spawn here, which still works while this thread lives.
        let mut cmd = cmd;
        return cmd.spawn();
    };
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner
        .send((cmd, reply_tx))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("the spawner thread did not answer"))?
}

/// Makes the kernel SIGKILL the child when its parent dies, so a test process that panics,
/// aborts or is killed leaves no control plane behind.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let Ok(parent) = libc::pid_t::try_from(std::process::id()) else {
        return;
    };
    // SAFETY: `pre_exec` is unsafe because the closure runs in the forked child before
    // `exec`, where only async-signal-safe operations are allowed. The closure only makes
    // two system calls, `prctl(PR_SET_PDEATHSIG)` and `getppid`, both async-signal-safe; it
    // allocates nothing (`last_os_error` and `from_raw_os_error` build an `io::Error` from
    // an OS code without allocating), takes no lock and touches no memory but its captured
    // `pid_t`. The `getppid` check closes the race where the parent died before `prctl`: the
    // child would then have been re-parented and would never get the signal, so it refuses
    // to start.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

/// Waits until `port` accepts connections, failing early if `proc` exits.
pub(crate) async fn wait_for_port(proc: &mut Proc, port: u16, timeout: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = proc.exited() {
            return Err(not_ready(proc, format!("exited with {status}")));
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(not_ready(proc, format!("port {port} not open after {timeout:?}")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A control-plane process that failed to become ready: its log's last lines with it.
pub(crate) fn not_ready(proc: &Proc, reason: String) -> Error {
    Error::NotReady {
        component: proc.name,
        reason,
        log: proc.log.clone(),
        log_tail: proc.log_tail(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_ports_a_process_listens_on_are_read_from_the_kernel() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // A connected socket of ours is not a listener.
        let _client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let ports = listening_ports(std::process::id()).unwrap();
        assert!(ports.contains(&port), "{port} not in {ports:?}");
        drop(listener);
        let ports = listening_ports(std::process::id()).unwrap();
        assert!(!ports.contains(&port), "{port} still in {ports:?}");
    }

    #[test]
    fn only_listening_sockets_of_the_process_count() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:937F 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1510683 1 0 100 0 0 10 0
   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1508 1 0 100 0 0 10 0
   2: 0100007F:A427 0100007F:937F 01 00000000:00000000 00:00000000 00000000     0        0 1510690 1 0 100 0 0 10 0
";
        // 1508 listens, but in another process; 1510690 is ours but connected.
        assert_eq!(listeners_in(table, &[1_510_683, 1_510_690]), vec![0x937F]);
    }

    #[test]
    fn a_chosen_port_stays_below_the_ephemeral_range() {
        assert_eq!(port_range(Some(32768)), (10_000, 32768));
        assert_eq!(port_range(Some(1024)), (1024, u16::MAX));
        assert_eq!(port_range(None), (1024, u16::MAX));
        for _ in 0..100 {
            let port = random_port().unwrap();
            assert!(port >= 1024, "{port}");
        }
    }

    #[test]
    fn address_in_use_is_recognised_for_that_port_only() {
        let log = "E1128 12:00:00.000000 1 run.go:72] \"command failed\" err=\"failed to create listener: \
                   failed to listen on 127.0.0.1:23456: listen tcp 127.0.0.1:23456: bind: address already in use\"\n";
        assert!(says_address_in_use(log, 23456));
        assert!(!says_address_in_use(log, 2345));
        assert!(!says_address_in_use(
            "listen tcp 127.0.0.1:23456: bind: permission denied",
            23456
        ));
    }
}
