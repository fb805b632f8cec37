//! Node-lifetime work: loops and listeners that outlive the call that started them.
//!
//! A ticker's loop, a server's listener, a watcher: each runs as a named task owned by
//! its node ([`Ctx::spawn`](crate::Ctx::spawn)). The call that starts it returns at
//! once. The task ends when the component stops it by name, when the node is removed
//! or replaced, when the module shuts down, and, for work started with
//! [`Ctx::spawn_on_leader`](crate::Ctx::spawn_on_leader), when this replica stops
//! leading. Starting work under a name that is already running replaces it.
//!
//! Stopping aborts the task at its next `.await` (after cancelling the token its
//! [`Ctx::cancelled`](crate::Ctx::cancelled) watches): nothing it would emit after
//! the stop leaves the node, which is what keeps a moved ticker from ticking twice.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The running work of one node, by name.
#[derive(Default)]
pub(crate) struct NodeWork {
    tasks: Mutex<HashMap<&'static str, Task>>,
    /// Bumped on every start, so that a finished task removes its own entry and not
    /// that of the task that replaced it.
    generation: std::sync::atomic::AtomicU64,
}

struct Task {
    generation: u64,
    leader_only: bool,
    cancel: CancellationToken,
    handle: JoinHandle<()>,
}

impl Task {
    fn stop(self) {
        self.cancel.cancel();
        self.handle.abort();
    }
}

impl NodeWork {
    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<&'static str, Task>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A generation and a token for work about to start.
    pub fn prepare(&self) -> (u64, CancellationToken) {
        let generation = self.generation.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        (generation, CancellationToken::new())
    }

    /// Records started work, stopping what ran under the same name.
    pub fn insert(
        &self,
        name: &'static str,
        generation: u64,
        leader_only: bool,
        cancel: CancellationToken,
        handle: JoinHandle<()>,
    ) {
        let old = self.tasks().insert(
            name,
            Task {
                generation,
                leader_only,
                cancel,
                handle,
            },
        );
        if let Some(old) = old {
            old.stop();
        }
    }

    /// Forgets work that ended by itself.
    pub fn finished(&self, name: &'static str, generation: u64) {
        let mut tasks = self.tasks();
        if tasks.get(name).is_some_and(|t| t.generation == generation) {
            tasks.remove(name);
        }
    }

    /// Stops the work called `name`; `true` if it was running.
    pub fn stop(&self, name: &str) -> bool {
        let task = self.tasks().remove(name);
        task.map(Task::stop).is_some()
    }

    /// Whether work called `name` runs.
    pub fn running(&self, name: &str) -> bool {
        self.tasks().get(name).is_some_and(|t| !t.handle.is_finished())
    }

    /// Stops all work (the node was removed, or the module shuts down).
    pub fn stop_all(&self) {
        let tasks: Vec<Task> = self.tasks().drain().map(|(_, t)| t).collect();
        tasks.into_iter().for_each(Task::stop);
    }

    /// Stops the work that only the leader may do: this replica stopped leading.
    pub fn stop_leader_only(&self) {
        let mut tasks = self.tasks();
        let names: Vec<&'static str> = tasks.iter().filter(|(_, t)| t.leader_only).map(|(n, _)| *n).collect();
        let stopped: Vec<Task> = names.into_iter().filter_map(|n| tasks.remove(n)).collect();
        drop(tasks);
        stopped.into_iter().for_each(Task::stop);
    }
}

impl Drop for NodeWork {
    fn drop(&mut self) {
        self.stop_all();
    }
}
