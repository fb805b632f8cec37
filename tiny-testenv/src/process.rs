//! Child processes of the control plane: spawning, logs, clean-up.

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
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
        let recipe = Recipe::of(&cmd);
        let child = start(name, cmd, &log, false)?;
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

/// `N` distinct free TCP ports on 127.0.0.1 (bound to port 0, then released).
pub(crate) fn free_ports<const N: usize>() -> Result<[u16; N], Error> {
    let mut listeners = Vec::with_capacity(N);
    let mut ports = [0u16; N];
    for port in &mut ports {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|source| Error::Io {
            context: "binding a free port on 127.0.0.1".into(),
            source,
        })?;
        *port = l
            .local_addr()
            .map_err(|source| Error::Io {
                context: "reading a bound port".into(),
                source,
            })?
            .port();
        listeners.push(l);
    }
    Ok(ports)
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
