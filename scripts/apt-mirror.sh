# shellcheck shell=bash
# Sourced by the image builders: print the Debian mirror this machine's apt
# is configured with (never a host name written into the repo).
apt_mirror() {
  local f m=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    m=$(awk '/^URIs:/ {print $2; exit}' "$f")
    [ -n "$m" ] && break
  done
  if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
    m=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
  fi
  echo "$m"
}
