#!/usr/bin/env bash
# Installs Mailwright as a service on Debian or Ubuntu, from the checkout this script is in. Run as root;
# running it again changes nothing that is already right (it never overwrites the configuration).
#   sudo scripts/install.sh                  # the box
#   sudo scripts/install.sh --with-rspamd    # and Debian's rspamd with Redis, for spam_filter = "rspamd"
# MAILWRIGHT_INSTALL_ROOT=/some/dir installs the files under that directory instead of / and skips what only
# makes sense on a real system (the user account, apt-get, systemctl): how the test suite checks every step.
set -euo pipefail

WITH_RSPAMD=no
for arg in "$@"; do
  case "$arg" in
    --with-rspamd) WITH_RSPAMD=yes ;;
    *) printf 'install: unknown option %s (usage: scripts/install.sh [--with-rspamd])\n' "$arg" >&2; exit 2 ;;
  esac
done

ROOT="${MAILWRIGHT_INSTALL_ROOT:-}"
APP_DIR="$(cd "$(dirname "$0")/.." && pwd)"
ETC="$ROOT/etc/mailwright"
DATA="$ROOT/var/lib/mailwright"
UNIT="$ROOT/etc/systemd/system/mailwright.service"
BIN="$ROOT/usr/local/bin/mailwright"
NODE_MIN="20.18.1"

say() { printf '%s\n' "$*"; }
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'install: %s\n' "$*" >&2; exit 1; }

if [ -z "$ROOT" ]; then
  [ "$(id -u)" -eq 0 ] || fail "run as root (sudo scripts/install.sh)"
  [ -f /etc/debian_version ] || fail "this script knows Debian and Ubuntu; on another system follow docs/operations.md, Install on a VPS"
fi

step "Node.js"
command -v node >/dev/null || fail "Node.js is not installed: apt-get install nodejs (Debian 13, Ubuntu 24.04) or see https://nodejs.org for $NODE_MIN or later"
have="$(node -p 'process.versions.node')"
if [ "$(printf '%s\n%s\n' "$NODE_MIN" "$have" | sort -V | head -1)" != "$NODE_MIN" ]; then
  fail "Node.js $have is too old: Mailwright needs $NODE_MIN or later"
fi
say "Node.js $have"

step "The mailwright user and its data directory"
if [ -z "$ROOT" ]; then
  if id mailwright >/dev/null 2>&1; then
    say "user mailwright exists"
  else
    useradd --system --home-dir /var/lib/mailwright --shell /usr/sbin/nologin mailwright
    say "created user mailwright"
  fi
else
  say "(skipped under MAILWRIGHT_INSTALL_ROOT: useradd --system mailwright)"
fi
mkdir -p "$DATA"
chmod 0700 "$DATA"
[ -z "$ROOT" ] && chown mailwright:mailwright "$DATA"
say "$DATA (0700)"

step "Dependencies and the dashboard"
if [ ! -d "$APP_DIR/node_modules" ]; then
  (cd "$APP_DIR" && npm ci --no-audit --no-fund)
elif [ ! -f "$APP_DIR/dist/dashboard/index.html" ]; then
  # The modules are there (a checkout that ran npm ci, or shares its modules): only the build is missing.
  (cd "$APP_DIR" && npm run build)
else
  say "already installed in $APP_DIR (run npm ci there after an update)"
fi

step "Configuration"
mkdir -p "$ETC"
if [ -f "$ETC/mailwright.toml" ]; then
  say "$ETC/mailwright.toml exists: left as it is"
else
  cp "$APP_DIR/config/mailwright.example.toml" "$ETC/mailwright.toml"
  say "wrote $ETC/mailwright.toml from the example: set hostname and public_url there"
fi
chmod 0640 "$ETC/mailwright.toml"
[ -z "$ROOT" ] && chown root:mailwright "$ETC/mailwright.toml"

step "The systemd unit"
mkdir -p "$(dirname "$UNIT")"
# The unit names /opt/mailwright; this checkout may live elsewhere.
unit="$(sed "s#/opt/mailwright#$APP_DIR#g" "$APP_DIR/systemd/mailwright.service")"
if [ -f "$UNIT" ] && [ "$(cat "$UNIT")" = "$unit" ]; then
  say "$UNIT is up to date"
else
  printf '%s\n' "$unit" > "$UNIT"
  say "installed $UNIT"
  [ -z "$ROOT" ] && systemctl daemon-reload
fi

step "The mailwright command"
# The command line with the service's configuration and data directory, as the service's user: what a sysadmin
# types (`sudo mailwright doctor`) reaches the running box's files, and whatever it writes stays that user's.
mkdir -p "$(dirname "$BIN")"
wrapper="#!/bin/sh
# Installed by $APP_DIR/scripts/install.sh: Mailwright's command line on this box.
export MAILWRIGHT_CONFIG=$ETC/mailwright.toml MAILWRIGHT_DATA_DIR=$DATA
if [ \"\$(id -u)\" = 0 ] && id mailwright >/dev/null 2>&1; then exec runuser -u mailwright -- $APP_DIR/scripts/mailwright \"\$@\"; fi
exec $APP_DIR/scripts/mailwright \"\$@\""
if [ -f "$BIN" ] && [ "$(cat "$BIN")" = "$wrapper" ]; then
  say "$BIN is up to date"
else
  printf '%s\n' "$wrapper" > "$BIN"
  chmod 0755 "$BIN"
  say "installed $BIN: run sudo mailwright <command>"
fi

if [ "$WITH_RSPAMD" = yes ]; then
  step "rspamd"
  # Debian's rspamd checks mail on 127.0.0.1:11333 and learns on its controller, 127.0.0.1:11334; Redis keeps
  # its Bayes statistics. The box asks it only when spam_filter = "rspamd".
  if [ -z "$ROOT" ]; then
    missing=()
    command -v rspamd >/dev/null || missing+=(rspamd)
    command -v redis-server >/dev/null || missing+=(redis-server)
    if [ ${#missing[@]} -gt 0 ]; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
      say "rspamd and redis-server are installed"
    fi
  else
    say "(skipped under MAILWRIGHT_INSTALL_ROOT: apt-get install rspamd redis-server)"
  fi
  REDIS_CONF="$ROOT/etc/rspamd/local.d/redis.conf"
  wrote=no
  if [ -f "$REDIS_CONF" ]; then
    say "$REDIS_CONF exists: left as it is"
  else
    mkdir -p "$(dirname "$REDIS_CONF")"
    printf 'servers = "127.0.0.1";\n' > "$REDIS_CONF"
    wrote=yes
    say "wrote $REDIS_CONF: rspamd keeps what it learns in the local Redis"
  fi
  if [ -z "$ROOT" ]; then
    systemctl enable --now redis-server rspamd
    # A running rspamd reads its new Redis setting only when it starts again.
    if [ "$wrote" = yes ]; then systemctl restart rspamd; fi
  fi
  say "Set spam_filter = \"rspamd\" in $ETC/mailwright.toml, then restart: sudo systemctl restart mailwright"
fi

step "This box's own DNS"
host="$(sed -n 's/^[[:space:]]*hostname[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' "$ETC/mailwright.toml" | head -1)"
[ -n "$host" ] || host="$(hostname -f 2>/dev/null || hostname)"
v4="$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1 || true)"
v6="$(ip -6 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1 || true)"
# No record is offered for a name other servers cannot find (src/dns/box-name.ts has the same rules): a short
# name such as the OS default, localhost, an address, or a suffix the public DNS never delegates.
public=yes
case "$host" in *.*) ;; *) public=no ;; esac
case "$host" in localhost | *.localhost | *.local | *.localdomain | *.internal | *.home.arpa) public=no ;; esac
case "$host" in *[!0-9.]*) ;; *) public=no ;; esac
if [ "$public" = yes ]; then
  say "Publish at your DNS provider, for the box's host name $host:"
  [ -n "$v4" ] && say "  $host.  A     $v4"
  [ -n "$v6" ] && say "  $host.  AAAA  $v6"
  [ -z "$v4$v6" ] && say "  $host.  A     <this server's public address>"
  say "Ask your hosting provider to set the reverse DNS (PTR) of ${v4:-the server address}${v6:+ and $v6} to $host:"
  say "receivers distrust mail from an address whose PTR does not name the sender back."
else
  say "The box's host name is \"$host\", which other mail servers cannot find (not a fully qualified public name)."
  say "Set hostname in $ETC/mailwright.toml to the box's public name, such as mail.example.com, then run this again:"
  say "it prints the A record to publish for that name and the reverse DNS (PTR) to ask your hosting provider for."
fi

step "Next"
say "1. sudoedit /etc/mailwright/mailwright.toml     # hostname, public_url, and acme = true (or tls_cert/tls_key)"
say "2. sudo systemctl enable --now mailwright"
say "3. sudo mailwright setup link     # open the one-time link it prints to create the owner"
say "Then add your domain in the dashboard and run: sudo mailwright doctor"
[ "$WITH_RSPAMD" = yes ] || say "To filter spam with rspamd instead of the built-in filter: sudo scripts/install.sh --with-rspamd"
