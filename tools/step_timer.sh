# shellcheck shell=bash
# Sourced by the set-up and test scripts: names each step as it starts and says how long it
# took, then prints every step's time at the end.
#   step_timer_init PREFIX     messages start with [PREFIX]
#   step NAME                  ends the step before (printing its time) and starts NAME
#   step_summary               ends the last step and prints the table of steps and the total
_step_prefix=ffcv
_step_name=""
_step_started=0
_step_first=0
_step_table=()

step_timer_init() {
  _step_prefix=$1
  _step_first=$(date +%s)
}

_step_duration() {
  local seconds=$1
  if ((seconds >= 60)); then
    printf '%d min %02d s' $((seconds / 60)) $((seconds % 60))
  else
    printf '%d s' "$seconds"
  fi
}

_step_close() {
  [ -n "$_step_name" ] || return 0
  local took
  took=$(_step_duration $(($(date +%s) - _step_started)))
  _step_table+=("$(printf '%9s  %s' "$took" "$_step_name")")
  printf '[%s] %s: %s\n' "$_step_prefix" "$_step_name" "$took"
  _step_name=""
}

step() {
  _step_close
  _step_name=$1
  _step_started=$(date +%s)
  printf '[%s] %s\n' "$_step_prefix" "$_step_name"
}

step_summary() {
  _step_close
  ((${#_step_table[@]})) || return 0
  printf '[%s] time per step:\n' "$_step_prefix"
  local row
  for row in "${_step_table[@]}"; do printf '[%s]   %s\n' "$_step_prefix" "$row"; done
  printf '[%s]   %9s  in all\n' "$_step_prefix" "$(_step_duration $(($(date +%s) - _step_first)))"
}
