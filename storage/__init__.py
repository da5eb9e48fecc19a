"""A revisioned key-value store with an ordered event stream and an in-memory watch hub.

It knows nothing of Kubernetes or HTTP: keys are strings, values are bytes.

- `interface.Storage` is what every backend implements; `types` and `errors` are its vocabulary,
  `keys` checks input at the boundary.
- `sqlite` is the default backend (`sqlite_file` opens the file, `sqlite_commit` and
  `sqlite_writer` write with group commit, `sqlite_reads` reads, `feed` streams committed events).
- `etcd` is the backend for several processes sharing one etcd.
- `hub.WatchHub` fans one backend's event stream out to many watchers.
"""
