# nginx serving a static site on a private loopback port, for the benchmarks (sourced):
#
#   source scripts/lib/nginx.sh
#   nginx_need rust-doc                 # installs nginx-light (and what else is named) when missing
#   nginx_start "$work" "$port" "$docroot"   # config in $work, started, waited for; sets $nginx_pid
#
# The caller's EXIT trap kills "$nginx_pid".

# Installs nginx-light and the Debian packages named when a command or directory is missing.
nginx_need() {
    local need=()
    command -v nginx >/dev/null || need+=(nginx-light)
    command -v curl >/dev/null || need+=(curl)
    need+=("$@")
    if ((${#need[@]})); then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null
    fi
}

# Writes $1/nginx.conf (one worker, no access log, keep-alive without limit; ETag and
# Last-Modified as nginx sends them by default), serving $3 on 127.0.0.1:$2, and starts it.
nginx_start() {
    local work=$1 port=$2 docroot=$3
    mkdir -p "$work/tmp"
    cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 4096; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    keepalive_requests 1000000;
    client_body_temp_path $work/tmp;
    proxy_temp_path $work/tmp;
    fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp;
    scgi_temp_path $work/tmp;
    server {
        listen 127.0.0.1:$port;
        root $docroot;
    }
}
CONF
    nginx -c "$work/nginx.conf" -g 'daemon off;' &
    nginx_pid=$!
    for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
}
