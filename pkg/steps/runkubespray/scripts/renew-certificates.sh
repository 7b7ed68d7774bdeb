limit=$1
shift
playbook="${TMPDIR:-/tmp}/bpa-renew-certificates.yml"
cat > "$playbook" <<'PLAYBOOK'
PLAYBOOK
echo "run-kubespray: kubespray's certificate renewal (k8s-certs-renew.sh's steps) on $limit, a master at a time"
exec ansible-playbook "$@" --limit="$limit" "$playbook"
