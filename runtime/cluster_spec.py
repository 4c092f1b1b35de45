"""`tf.train.ClusterSpec`: the jobs of a cluster and the address of each of their tasks.

A cluster is a set of named jobs (`"ps"`, `"worker"`), each a set of tasks numbered from 0;
a task is one process, named `/job:<job>/task:<index>` in device names.  A ClusterSpec is
built from a dict mapping each job to a list of addresses (task i at position i) or to a
dict {task index: address} (a job whose tasks are not all present), or from another
ClusterSpec.  It is read the way TensorFlow 1.x reads it: `jobs` (in the order given; `str`
sorts them), `num_tasks`, `task_indices`, `task_address`, `job_tasks` (None where a task is
missing) and `as_dict` (lists for jobs numbered 0..n-1, dicts otherwise; task indices given
as strings are read as integers).  Errors are TensorFlow's: TypeError for a value of the
wrong kind, ValueError for an unknown job or task.
"""

from __future__ import annotations


class ClusterSpec:
    """The jobs of a cluster and their tasks' addresses (module docstring)."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            jobs = {job: dict(tasks) for job, tasks in cluster._jobs.items()}
        elif isinstance(cluster, dict):
            jobs = {}
            for job, tasks in cluster.items():
                if not isinstance(job, str):
                    raise TypeError(f"A ClusterSpec's job names must be strings, got "
                                    f"{job!r}.")
                jobs[job] = _tasks_of(job, tasks)
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names "
                            "to lists of network addresses, or a `ClusterSpec`; got "
                            f"{type(cluster).__name__}.")
        self._jobs = jobs

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other) -> bool:
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self):
        return hash(tuple(sorted((job, tuple(sorted(tasks.items())))
                                 for job, tasks in self._jobs.items())))

    def __repr__(self):
        spec = self.as_dict()
        return "ClusterSpec({" + ", ".join(f"{job!r}: {spec[job]!r}"
                                           for job in sorted(spec)) + "})"

    __str__ = __repr__

    @property
    def jobs(self) -> list:
        """The job names, in the order the cluster gave them."""
        return list(self._jobs)

    def as_dict(self) -> dict:
        """{job: [addresses]} for a job with tasks 0..n-1, else {job: {index: address}}."""
        out = {}
        for job in self.jobs:
            tasks = self._jobs[job]
            indices = sorted(tasks)
            if not indices:
                out[job] = {}
            elif indices == list(range(len(indices))):
                out[job] = [tasks[i] for i in indices]
            else:
                out[job] = {i: tasks[i] for i in indices}
        return out

    def _tasks(self, job_name: str) -> dict:
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name: str) -> int:
        """How many tasks job `job_name` has (ValueError for a job not in the cluster)."""
        return len(self._tasks(job_name))

    def task_indices(self, job_name: str) -> list:
        """The indices of the tasks of job `job_name`, sorted."""
        return sorted(self._tasks(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address of task `task_index` of job `job_name`."""
        tasks = self._tasks(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job "
                             f"{job_name!r}") from None

    def job_tasks(self, job_name: str) -> list:
        """The addresses of job `job_name`'s tasks by index, None where an index is
        missing (tasks {0: a, 2: b} give [a, None, b])."""
        tasks = self._tasks(job_name)
        if not tasks:
            return []
        return [tasks.get(i) for i in range(max(tasks) + 1)]

    def device_names(self) -> list:
        """Every task's device-name prefix, '/job:<job>/task:<index>'."""
        return [f"/job:{job}/task:{i}" for job in self.jobs for i in self.task_indices(job)]


def _tasks_of(job: str, tasks) -> dict:
    """{index: address} of a job's tasks given as a list, tuple or dict."""
    if isinstance(tasks, (list, tuple)):
        out = dict(enumerate(tasks))
    elif isinstance(tasks, dict):
        out = {int(index): address for index, address in tasks.items()}
    else:
        raise TypeError(f"The tasks of job {job!r} must be a list of addresses or a dict "
                        f"of task index to address, got {type(tasks).__name__}.")
    for index, address in out.items():
        if not isinstance(address, str):
            raise TypeError(f"The address of task {index} of job {job!r} must be a "
                            f"string, got {address!r}.")
    return out
