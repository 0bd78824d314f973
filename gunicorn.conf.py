"""gunicorn's settings wherever the image runs the web tier (Dockerfile, docker-compose.yml,
deploy/gpuposture.yaml): gunicorn reads ./gunicorn.conf.py from its working directory, /app.

Threaded workers: a sync worker serves one request at a time, so three long requests (large
findings exports) left no worker for anything else, the health check included, and one that
ran past `timeout` got its worker killed. A gthread worker serves `threads` requests at once,
and its heartbeat runs beside them, so /healthz answers while exports stream
(bench/export_scale.py measures it). The command line, or GUNICORN_CMD_ARGS, overrides these."""

worker_class = "gthread"
threads = 4
timeout = 60
