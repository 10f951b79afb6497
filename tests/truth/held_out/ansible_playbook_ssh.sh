#!/bin/bash
# expect: busy
# remote: sshd
# needs: ansible-playbook ssh sshd
# packages: ansible-core openssh-client openssh-server (Debian; or `pip install ansible-core`)
# proof: ansible.log ok=1 +changed=1
# why: `ansible-playbook` against another host over real OpenSSH, one task (`command: sleep N`) running on the remote for the whole work time: the playbook run is the job, waiting on the host
. "$TRUTH_TOOLS/lib.sh"
# Ansible's own ssh defaults (-C -o ControlMaster=auto -o ControlPersist=60s): its ssh master forks off as a daemon.
A="$TRUTH_DIR/ansible"
mkdir -p "$A" && : > "$A/ansible.cfg"
user=${SSH_REMOTE##* }; user=${user%@*}
printf 'remote ansible_host=%s ansible_user=%s ansible_python_interpreter=/usr/bin/python3\n' "$OUTSIDE" "$user" > "$A/hosts"
cat > "$A/play.yml" <<'YML'
- hosts: remote
  gather_facts: false
  tasks:
    - name: wait for the remote migration
      command: sleep {{ work }}
YML
opts=${SSH_REMOTE% *}
export ANSIBLE_SSH_ARGS="-C -o ControlMaster=auto -o ControlPersist=60s ${opts#ssh }"
export ANSIBLE_HOME="$A" ANSIBLE_LOCAL_TEMP="$A/tmp" ANSIBLE_REMOTE_TEMP="$A/rtmp" ANSIBLE_SSH_CONTROL_PATH_DIR="$A/cp"
export ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_CONFIG="$A/ansible.cfg"
work_started
ansible-playbook -i "$A/hosts" -e work="${TRUTH_WORK%.*}" "$A/play.yml" > "$TRUTH_DIR/ansible.log" 2>&1 < /dev/null
work_done; stay
