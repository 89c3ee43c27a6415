#!/bin/sh
# AgentRL's sudo inside a desktop sandbox: no password, no more rights than the sandbox already has.
read_password=0
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    -S|--stdin) read_password=1; shift ;;
    -u|-g|-p|-U|-C|-h|-r|-t|-D|-R|-T|--user|--group|--prompt|--other-user) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
if [ "$read_password" = 1 ]; then read -r _agentrl_password || true; fi
[ $# -gt 0 ] || exit 0
case "${1##*/}" in
  apt|apt-get|dpkg)
    # The package tools refuse to run unless uid 0: they get a root of their own user namespace (still this
    # sandbox's user outside it, so no more rights), over the sandbox's private package database.
    if unshare --map-root-user true 2>/dev/null; then
      export APT_CONFIG="${APT_CONFIG:-$(dirname "$0")/apt.conf}"
      exec unshare --map-root-user -- "$@"
    fi ;;
esac
exec "$@"
