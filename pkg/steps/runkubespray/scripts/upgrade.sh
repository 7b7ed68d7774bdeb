limit=$1
shift
echo "run-kubespray: playbooks/facts.yml on every node first: upgrade-cluster.yml --limit=$limit needs the others' facts in kubespray's fact cache"
ansible-playbook "$@" playbooks/facts.yml || exit
exec ansible-playbook "$@" --limit="$limit" upgrade-cluster.yml
