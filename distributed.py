"""`flowjit.distributed`: clusters of tasks (docs/architecture.md, "Clusters").

`LocalCluster(cluster_spec, backend="ray")` starts every task of a `ClusterSpec` on this
machine (a Ray actor per task, or with backend="threads" every task in this process) and
gives a `.target` for `tf.Session`; `Server` is `tf.train.Server`.  Both live in
runtime/local_cluster.py; the backends in runtime/cluster_backend.py and
runtime/ray_backend.py.
"""

from .runtime.cluster_spec import ClusterSpec
from .runtime.local_cluster import LocalCluster, Server

__all__ = ["ClusterSpec", "LocalCluster", "Server"]
