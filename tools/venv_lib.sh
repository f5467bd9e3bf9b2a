# Sourced by the setup_venv.sh scripts (tools/cutlass_corpus, tools/cute_dsl): a venv inside the build
# tree with one pinned PyPI package. Progress goes to stderr.

# venv_create VENV: python3 -m venv, installing Debian's python3-venv where it is missing.
venv_create() {
  local venv="$1"
  [[ -x "$venv/bin/python" ]] && return 0
  echo "setup_venv: creating $venv" >&2
  if ! python3 -m venv "$venv" >&2; then
    rm -rf "$venv"
    "$(dirname "${BASH_SOURCE[0]}")/install_packages.sh" python3-venv
    if ! python3 -m venv "$venv" >&2; then
      echo "setup_venv: 'python3 -m venv' failed even with python3-venv installed" >&2
      return 1
    fi
  fi
}

# venv_pip_install VENV OFFLINE_HINT PIP_ARGS...: pip install into the venv; on failure, the log's tail
# and either the network hint (OFFLINE_HINT says how to install without PyPI) or the log's path.
venv_pip_install() {
  local venv="$1" hint="$2"
  shift 2
  local log="$venv/pip-install.log"
  echo "setup_venv: pip install $*" >&2
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check --timeout 30 --retries 2 "$@" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    if grep -qiE "connection|resolve|network|timed out|Temporary failure|No matching distribution" "$log"; then
      echo "setup_venv: cannot fetch from PyPI (is https://pypi.org reachable? a proxy set in PIP_INDEX_URL /" \
           "HTTPS_PROXY?). Offline: $hint" >&2
    else
      echo "setup_venv: pip install failed (log: $log)" >&2
    fi
    return 1
  fi
}

# venv_check_version VENV PACKAGE VERSION: the installed version is the pinned one.
venv_check_version() {
  local installed
  installed=$("$1/bin/python" -m pip show "$2" 2>/dev/null | sed -n 's/^Version: //p')
  if [[ "$installed" != "$3" ]]; then
    echo "setup_venv: installed $2 is '$installed', expected $3" >&2
    return 1
  fi
}
