"""Cluster mode: several server nodes sharing one Redis (and one PostgreSQL for results).

A room lives on the node that created it, under a lease in Redis that the
owner renews (:mod:`server.cluster.node`); a client that reaches another
node is sent there with ``moved`` (:mod:`server.cluster.routing`); every
node lists every node's public rooms.  The Redis side is
:mod:`server.cluster.directory` (key names in :mod:`server.cluster.keys`,
scripts in :mod:`server.cluster.scripts`).  Without ``--redis-url`` none of
this is loaded.
"""
