#!/usr/bin/env bash
# NFS-Ganesha's configuration as storlab's scripts write it (sourced by scripts/fileservers.sh
# and scripts/pacemaker.sh): NFSv3 and v4 over TCP, no grace period, read-write VFS exports
# without root squash.

# ganesha_conf_head WHAT RECOVERY_ROOT: the core settings; WHAT names the file's writer in its
# first line, RECOVERY_ROOT holds NFSv4's recovery state.
ganesha_conf_head() {
  cat <<EOF
# $1
NFS_CORE_PARAM {
  Protocols = 3, 4;
  NFS_Port = 2049;
  MNT_Port = 20048;
  NLM_Port = 32803;
  Enable_RQUOTA = false;
  Mount_Path_Pseudo = true;
}
NFSV4 {
  Graceless = true;
  RecoveryBackend = fs;
  RecoveryRoot = "$2";
}
NFS_KRB5 { Active_krb5 = false; }
EOF
}

# ganesha_export ID PATH PSEUDO: one read-write export (VFS FSAL, no root squash).
ganesha_export() {
  cat <<EOF
EXPORT {
  Export_Id = $1;
  Path = "$2";
  Pseudo = "$3";
  Access_Type = RW;
  Squash = No_Root_Squash;
  Protocols = 3, 4;
  Transports = TCP;
  SecType = sys;
  FSAL { Name = VFS; }
}
EOF
}
