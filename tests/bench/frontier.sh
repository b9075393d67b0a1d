# Sourced by planspeed.sh and published.sh (not run on its own): the one-step timing-only
# pipeline both simulate at frontier scale. The caller sets tmp (a folder of its own).

# scenario NAME PROFILE DEVICE UPLINK: $tmp/NAME.ini, one step of PROFILE on a multi-rack
# platform of DEVICE servers (2400 Gbit/s inside, UPLINK per server, 2 us links, CM02),
# tensor groups of 8 timed in closed form and one member of each simulated for the 8 (a
# rack per group: its messages carry the group's bytes over the rack's uplink; the sim
# suite's tensor_members_one_matches_all, and GPT-3 175B on 1024 A100s gives the whole
# simulation's database), the replicas' ring a message per phase, full recomputation, Adam
# in bf16; the callers --set the layout
scenario() {
    cat > "$tmp/$1.ini" <<EOF2
[run]
name = $1
steps = 1
eval_every = 0
[model]
arch = profile:$2
precision = bf16
optimizer = adam
recompute = full
[cluster]
platform = multi-rack
device = $3
bandwidth = 2400Gbps
uplink_bandwidth = $4
latency = 2us
uplink_latency = 2us
network_model = CM02
[strategy]
kind = pipeline
algorithm = ring
pipeline_schedule = 1f1b
tensor = 8
tensor_comm = formula
tensor_members = one
ring_messages = phases
EOF2
}
