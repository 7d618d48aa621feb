# Shared by the peers' install.sh and start.sh scripts (sourced, not run).
# Everything a peer installs goes into its own folder (node_modules/ or venv/),
# never globally; Debian packages (pypy3, nodejs, python3-venv) come from apt,
# with sudo only when not root.

PEERS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

say() { printf '%s: %s\n' "$PEER" "$*" >&2; }
die() { printf '%s: FAILED: %s\n' "$PEER" "$*" >&2; exit 1; }

# apt_install PKG... — install Debian packages (apt-get update first, once).
apt_install() {
  command -v apt-get >/dev/null || die "needs the Debian packages $*, and this system has no apt-get"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  say "installing Debian packages: $*"
  if [ -z "${PEERS_APT_UPDATED:-}" ]; then
    $sudo apt-get update -qq >&2 || die "apt-get update failed"
    export PEERS_APT_UPDATED=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2 || die "apt-get install $* failed"
}

# need_node — node and npm on PATH (Debian's nodejs and npm if missing).
need_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt_install nodejs npm
  fi
}

# npm_install DIR — `npm ci` from DIR's package-lock.json into DIR/node_modules,
# skipped when node_modules already matches the lock file.
npm_install() {
  local dir="$1"
  need_node
  if [ -f "$dir/node_modules/.package-lock.json" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    return 0
  fi
  say "npm ci in $dir"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed in $dir"
  touch "$dir/node_modules/.package-lock.json"
}

# node_version DIR PACKAGE — the installed version of PACKAGE in DIR/node_modules.
node_version() {
  node -p "require('$1/node_modules/$2/package.json').version" 2>/dev/null || echo "?"
}

# venv_install VENV PYTHON REQUIREMENTS — a venv made by PYTHON (`-m venv`)
# with REQUIREMENTS installed; skipped when it is already up to date.
# Falls back to ensurepip, then to pip's own wheel from PyPI (fetched with the
# host's python3 -m pip download) when PYTHON's venv comes without pip.
venv_install() {
  local venv="$1" python="$2" req="$3"
  local stamp="$venv/.installed"
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$stamp" -nt "$req" ] && cmp -s "$req" "$stamp"; then
    return 0
  fi
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$venv"
    make_venv "$venv" "$python"
  fi
  say "pip install -r $req"
  local errs
  errs="$(mktemp)"
  if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" 2>"$errs" >&2; then
    cat "$errs" >&2
    die "pip install -r $req failed: $(grep -m1 '^ERROR' "$errs" || tail -n1 "$errs")"
  fi
  cat "$errs" >&2
  rm -f "$errs"
  cp "$req" "$stamp"
}

make_venv() {
  local venv="$1" python="$2"
  say "creating a venv with $python ($("$python" --version 2>&1 | tr '\n' ' '))"
  if [ -z "${PEERS_FORCE_PIP_FALLBACK:-}" ] && "$python" -m venv "$venv" >&2 2>/dev/null && "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    return 0
  fi
  rm -rf "$venv"
  "$python" -m venv --without-pip "$venv" >&2 || die "$python -m venv --without-pip failed"
  if [ -z "${PEERS_FORCE_PIP_FALLBACK:-}" ] && "$venv/bin/python" -m ensurepip --default-pip >/dev/null 2>&1; then
    return 0
  fi
  # No pip for this interpreter: take pip's wheel from PyPI with the host's
  # CPython and let the wheel install itself (a wheel is a zip pip can run from).
  say "no pip for $python from Debian; fetching pip from PyPI"
  local host_py tmp pyver
  host_py="$(command -v python3)" || die "no pip for $python and no python3 to fetch it with"
  pyver="$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  tmp="$(mktemp -d)"
  "$host_py" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version "$pyver" -d "$tmp" pip setuptools >&2 || die "could not download pip from PyPI"
  "$venv/bin/python" "$(ls "$tmp"/pip-*.whl)/pip" install --quiet --no-index "$tmp"/*.whl >&2 \
    || die "could not install pip into $venv"
  rm -rf "$tmp"
}

# python_version VENV DIST — the installed version of DIST in VENV.
python_version() {
  "$1/bin/python" -c "from importlib.metadata import version; print(version('$2'))" 2>/dev/null || echo "?"
}

# python_runtime VENV — VENV's interpreter: "CPython 3.11.7", or
# "PyPy 3.9.16 (PyPy 7.3.11)".
python_runtime() {
  "$1/bin/python" -c 'import platform, sys
pypy = getattr(sys, "pypy_version_info", None)
print(platform.python_implementation(), platform.python_version(), *(["(PyPy %d.%d.%d)" % pypy[:3]] if pypy else []))'
}

# cpython_venv_install REQUIREMENTS — the venv of a CPython peer: made in
# peers/$PEER/venv by $PEERS_PYTHON (default python3; Debian's python3 and
# python3-venv when missing), with REQUIREMENTS installed (see venv_install).
cpython_venv_install() {
  local python="${PEERS_PYTHON:-python3}"
  command -v "$python" >/dev/null || apt_install python3 python3-venv
  # Debian's own python3 has venv's pip (ensurepip) only with python3-venv.
  "$python" -c 'import ensurepip' 2>/dev/null || apt_try python3-venv || true
  venv_install "$PEERS_DIR/$PEER/venv" "$python" "$1"
}

# start_peer PORT INSTALLED PROGRAM ARG... — the whole of a start.sh: checks
# PORT, then that the install left INSTALLED (a path under peers/$PEER), then
# execs PROGRAM ARG... PORT (exec, so the caller's taskset and signals reach
# the server itself).
start_peer() {
  case "$1" in
    ''|*[!0-9]*) echo "usage: $0 PORT   (serves on 127.0.0.1:PORT; prints 'listening on http://127.0.0.1:PORT/' when ready)" >&2; exit 2 ;;
  esac
  local port="$1" installed="$2"
  shift 2
  [ -f "$PEERS_DIR/$PEER/$installed" ] || die "not installed: run peers/$PEER/install.sh"
  exec "$@" "$port"
}

# apt_try PKG... — like apt_install, but returns non-zero instead of exiting.
apt_try() { ( apt_install "$@" ) ; }

# need_java — java (17 or later) and mvn on PATH (Debian's
# openjdk-17-jdk-headless and maven if missing).
need_java() {
  if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    apt_install openjdk-17-jdk-headless maven
  fi
}

# maven_build MODULE JAR — builds the Maven module MODULE of peers/java (and
# the modules it uses, e.g. the shared apps) from Maven Central, into the
# local repository peers/java/.m2, and copies its jar JAR to peers/$PEER/JAR.
# Skipped when that jar is newer than every source file of peers/java.
maven_build() {
  local module="$1" jar="$PEERS_DIR/$PEER/$2" src="$PEERS_DIR/java"
  need_java
  if [ -f "$jar" ] && [ -z "$(find "$src" \( -path "$src/.m2" -o -name target \) -prune -o -type f -newer "$jar" -print -quit)" ]; then
    return 0
  fi
  say "mvn package -pl $module -am in $src"
  (cd "$src" && mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$src/.m2" -DskipTests clean package -pl "$module" -am >&2) \
    || die "mvn package failed for peers/java/$module"
  cp "$src/$module/target/$2" "$jar.tmp" && mv "$jar.tmp" "$jar"
}

# jar_version JAR GROUP ARTIFACT — the version of a library packed in JAR:
# from its Maven pom.properties (shaded jars) or its file name in BOOT-INF/lib
# (Spring Boot jars).
jar_version() {
  python3 - "$@" <<'PY'
import re, sys, zipfile
jar, group, artifact = sys.argv[1:4]
z = zipfile.ZipFile(jar)
names = z.namelist()
props = f"META-INF/maven/{group}/{artifact}/pom.properties"
if props in names:
    print(re.search(r"^version=(.*)$", z.read(props).decode(), re.M).group(1)); sys.exit()
for n in names:
    m = re.match(rf"BOOT-INF/lib/{re.escape(artifact)}-(\d[^/]*)\.jar$", n)
    if m:
        print(m.group(1)); sys.exit()
print("?")
PY
}

# java_runtime — "OpenJDK 17.0.15" of the java on PATH.
java_runtime() {
  java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.runtime\.version = \(.*\)$/java \1/p'
}
