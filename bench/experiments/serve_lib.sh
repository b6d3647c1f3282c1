# Sourced by the serving experiments: one `dualpath serve` at a time in a directory of its own, up once it
# listens, stopped with SIGTERM (and at the caller's exit, by the trap the caller sets on serve_cleanup).
# Needs $bin and $port.
serve_pid=""

# start_serve DIR ARGS...: `dualpath serve ARGS --listen 127.0.0.1:$port` in DIR (a fresh store there).
start_serve() {
  local dir="$1"
  shift
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && exec "$bin" serve "$@" --listen "127.0.0.1:$port" >serve.out 2>serve.err) &
  serve_pid=$!
  for _ in $(seq 1 300); do  # up once it listens (bounded: 60 s)
    grep -q "serving on" "$dir/serve.out" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "serve did not listen within 60 s: $(tail -3 "$dir/serve.err")" >&2
  return 1
}

stop_serve() {
  kill -TERM "$serve_pid"
  wait "$serve_pid" || true
  serve_pid=""
}

serve_cleanup() {
  [[ -n "$serve_pid" ]] && kill "$serve_pid" 2>/dev/null || true
}
