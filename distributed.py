"""`flowjit.distributed`: clusters of tasks (docs/architecture.md, "Clusters").

`LocalCluster(cluster_spec)` runs every task of a `ClusterSpec` in this process and gives
a `.target` for `tf.Session`; `Server` is `tf.train.Server`.  Both live in
runtime/local_cluster.py.
"""

from .runtime.cluster_spec import ClusterSpec
from .runtime.local_cluster import LocalCluster, Server

__all__ = ["ClusterSpec", "LocalCluster", "Server"]
