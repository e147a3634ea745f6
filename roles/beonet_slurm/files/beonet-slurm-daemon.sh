#!/bin/sh
# Slurm's daemons where no init system runs them (a container):
#   beonet-slurm-daemon.sh ensure|restart|stop munged|slurmctld|slurmd [NODE]
# ensure: start the daemon unless it runs (prints "started" or "running");
# restart: stop and start it if it runs (prints "restarted" or "not running");
# stop: stop it if it runs (prints "stopped" or "not running").
# A daemon runs when its pid file names a live process of its name; slurmd writes
# its pid file once it listens (10 s after it starts where the resolver does not
# answer for 0.0.0.0, as in the Docker lab), so a start may take up to 60 s.
set -eu
action=$1 daemon=$2 node=${3:-}
case $daemon in
  munged) pidfile=/run/munge/munged.pid ;;
  slurmctld) pidfile=/run/slurmctld.pid ;;
  slurmd) pidfile=/run/slurmd.pid ;;
  *) echo "unknown daemon $daemon" >&2; exit 2 ;;
esac
pid=

running() {
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [ -n "$pid" ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$daemon" ]
}

start() {
  case $daemon in
    munged)
      install -d -o munge -g munge -m 0755 /run/munge
      runuser -u munge -- /usr/sbin/munged ;;
    slurmctld) /usr/sbin/slurmctld ;;
    slurmd) /usr/sbin/slurmd -N "$node" ;;
  esac
  i=0
  until running; do
    i=$((i + 1))
    if [ "$i" -gt 600 ]; then
      echo "$daemon did not start in 60 s (no live process in $pidfile)" >&2
      exit 1
    fi
    sleep 0.1
  done
}

stop() {
  kill "$pid"
  i=0
  while running; do
    i=$((i + 1))
    if [ "$i" -eq 300 ]; then
      kill -9 "$pid"
    elif [ "$i" -gt 400 ]; then
      echo "$daemon (pid $pid) did not stop" >&2
      exit 1
    fi
    sleep 0.1
  done
}

case $action in
  ensure)
    if running; then echo running; else start; echo started; fi ;;
  restart)
    if running; then stop; start; echo restarted; else echo "not running"; fi ;;
  stop)
    if running; then stop; echo stopped; else echo "not running"; fi ;;
  *) echo "unknown action $action" >&2; exit 2 ;;
esac
