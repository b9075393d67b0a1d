# Bash completion for dtsim: installed as share/bash-completion/completions/dtsim (loaded on
# first use), or `source sim/cli/dtsim-completion.bash` in a checkout.
#
# Commands, sub-commands and each command's options with the kind of value each takes come
# from dtsim's own command table (`dtsim __complete`, sim/cli/commands.c), so a new command or
# option completes without editing this file; the keys after --set come from `dtsim keys`, run
# ids after `show`, --runs and --timeline-run, and sweep names and ids after --sweep, from
# `dtsim runs` (of the database --db names), device names after `devices` and
# `--set cluster.device=`, from `dtsim devices`. Scenario arguments complete to .ini files and
# folders; an option's value by its kind: files, folders, or the words of its choices.
# The dtsim asked is the one on the command line (./build/dtsim, an installed one).

# The commands of the table (a group such as bench once).
_dtsim_commands()
{
    "$1" __complete commands 2>/dev/null
}

# The sub-commands of a group (bench: trainer, sim); none for a plain command.
_dtsim_subs()
{
    "$1" __complete subs "$2" 2>/dev/null
}

# The long options of `dtsim CMD [SUB]`, sorted.
_dtsim_options()
{
    "$1" __complete options "${@:2}" 2>/dev/null | awk '$1 ~ /^--/ {print $1}' | sort -u
}

# Every scenario key as "section.key=" (the tables of `dtsim keys`).
_dtsim_keys()
{
    "$1" keys 2>/dev/null | awk '/^### \[/ {s = substr($2, 2, length($2) - 2); next}
        /^#/ {s = ""}
        s != "" && /^\| `/ {split($0, f, "`"); print s "." f[2] "="}'
}

# The values of one key that takes a word from a list ("section.key"): the words of its
# "accepted values" column in `dtsim keys` (strategy.kind: single, sync-ps, ...); none for numbers,
# sizes and paths.
_dtsim_key_values()
{
    local section=${2%%.*} key=${2#*.}
    "$1" keys 2>/dev/null | awk -v s="$section" -v k="$key" -F'|' '
        /^### \[/ {split($0, h, /[][]/); cur = h[2]; next}
        /^\| key \|/ {for (i = 2; i <= NF; i++) if ($i == " accepted values ") col = i; next}
        cur == s && $2 ~ ("^ `" k "` $") {
            n = split($col, v, ",")
            for (i = 1; i <= n; i++) {
                sub(/ *\(.*$/, "", v[i]) # "text (byte tokens ...)": the word before
                gsub(/^ +| +$/, "", v[i])
                if (v[i] ~ /^[a-z0-9][a-z0-9_-]*$/) w[++m] = v[i]
            }
            if (m >= 2) for (i = 1; i <= m; i++) print w[i]
            exit
        }'
}

# The device catalogue's names (the rows of `dtsim devices`, whose fp32 peak is a number).
_dtsim_devices()
{
    "$1" devices 2>/dev/null | awk 'NR > 1 && $2 ~ /^[0-9.]+$/ {print $1}'
}

# The run ids, or (with sweeps) the sweeps' names and then their ids, of the database $2 (the
# default: none given). A sweep's id is its name, -YYYYMMDDTHHMMSSZ and -PID; --sweep takes
# either (a name: its newest sweep).
_dtsim_runs()
{
    local -a db=()
    [[ -n $2 ]] && db=(--db "$2")
    if [[ $3 == sweeps ]]; then
        # --wide ends a line with the start time, then the sweep id and index, whole
        "$1" runs --wide "${db[@]}" 2>/dev/null |
            sed -n 's/^.*[0-9]Z  \(.*\):[0-9]*$/\1/p' | awk '!seen[$0]++ {
                ids[++n] = $0
                name = $0
                # (mawk has no {m,n}: the digits spelled out)
                d8 = "[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]"
                if (sub("-" d8 "T" substr(d8, 1, 30) "Z-[0-9]+$", "", name) && !named[name]++)
                    print name
            } END {for (i = 1; i <= n; i++) print ids[i]}'
    else
        "$1" runs "${db[@]}" 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}'
    fi
}

_dtsim()
{
    # Words as typed up to the cursor, split on blanks only: bash's own split also breaks at
    # = and :, which would part "cluster.bandwidth=1Gbps" and "--db=x.db".
    local line=${COMP_LINE:0:COMP_POINT} cur=
    local -a words=()
    read -ra words <<<"$line"
    if [[ ! $line =~ [[:space:]]$ ]] && ((${#words[@]} > 1)); then
        cur=${words[${#words[@]} - 1]}
        unset 'words[${#words[@]}-1]'
    fi
    local dtsim=${words[0]} prev=${words[${#words[@]} - 1]} cmd= sub= db= n=0 i w start=2
    # the command, and a group's sub-command, are the words after dtsim
    [[ ${words[1]} != -* ]] && cmd=${words[1]}
    local -a subs=()
    [[ -n $cmd ]] && mapfile -t subs < <(_dtsim_subs "$dtsim" "$cmd")
    if ((${#subs[@]} && ${#words[@]} > 2)); then
        sub=${words[2]}
        start=3
    fi
    # each option's kind of value (none for a switch) and its choices, from the table
    local -A kind=() choices=()
    local name k c
    if [[ -n $cmd ]] && ((${#subs[@]} == 0)) || [[ -n $sub ]]; then
        while read -r name k c; do
            kind[$name]=$k
            choices[$name]=$c
        done < <("$dtsim" __complete options "$cmd" ${sub:+"$sub"} 2>/dev/null)
    fi
    for ((i = start; i < ${#words[@]}; i++)); do
        w=${words[i]}
        case $w in
        --db) db=${words[i + 1]}; ((i++)) ;;
        --db=*) db=${w#--db=} ;;
        -*) [[ -n ${kind[$w]} && ${kind[$w]} != none ]] && ((i++)) ;;
        *) ((n++)) ;;
        esac
    done

    # --opt=value: the value completes as after --opt, each answer keeping "--opt="
    local opt=
    if [[ $cur == --*=* ]]; then
        prev=${cur%%=*}
        opt=$prev=
        cur=${cur#*=}
    fi
    local -a list=()
    local files= nospace= nosort=
    case $prev in
    --db) files=all ;;
    --set)
        if [[ $cur == cluster.device=* ]]; then
            # the catalogue's devices, and custom (a FILE.ini is typed)
            mapfile -t list < <({
                _dtsim_devices "$dtsim"
                echo custom
            } | sed "s|^|cluster.device=|")
        elif [[ $cur == *.*=* ]]; then
            # a key's value: the words its list allows, after "section.key="
            local k=${cur%%=*}
            mapfile -t list < <(_dtsim_key_values "$dtsim" "$k" | sed "s|^|$k=|")
        else
            mapfile -t list < <(_dtsim_keys "$dtsim")
            nospace=1
        fi
        ;;
    --runs | --timeline-run)
        mapfile -t list < <(_dtsim_runs "$dtsim" "$db")
        nosort=1
        ;;
    --sweep) mapfile -t list < <(_dtsim_runs "$dtsim" "$db" sweeps) ;;
    --device)
        # dtsim plan's list h100,h200: the names after the last comma, the list before kept
        local head=
        [[ $cur == *,* ]] && head=${cur%,*},
        mapfile -t list < <(_dtsim_devices "$dtsim" | sed "s|^|$head|")
        ;;
    *)
        if [[ $prev == -* && -n ${kind[$prev]} && ${kind[$prev]} != none ]]; then
            # an option's value, by its kind
            case ${kind[$prev]} in
            path) files=all ;;
            dir) files=dirs ;;
            choice) IFS=, read -ra list <<<"${choices[$prev]}" ;;
            choice-list)
                # a comma list (plot's png,svg): the words after the last comma, the list
                # before kept
                local head=
                [[ $cur == *,* ]] && head=${cur%,*},
                IFS=, read -ra list <<<"${choices[$prev]}"
                list=("${list[@]/#/$head}")
                ;;
            text)
                # words the table leaves as text (plan reads its own options; a profile is
                # a built-in name or a file), by the option's name
                case $prev in
                --precision) list=(fp32 tf32 bf16 fp8) ;;
                --profile) files='*.ini' ;;
                *) return 0 ;;
                esac
                ;;
            *) return 0 ;; # a number, a size, a time, a rate
            esac
        elif [[ -z $cmd ]]; then
            mapfile -t list < <(_dtsim_commands "$dtsim"; printf '%s\n' --help --version)
        elif ((${#subs[@]})) && [[ -z $sub ]]; then
            [[ $cur != -* ]] && list=("${subs[@]}")
        elif [[ $cur == -* ]]; then
            mapfile -t list < <(_dtsim_options "$dtsim" "$cmd" ${sub:+"$sub"})
        else
            # arguments: scenarios, run ids, devices
            case $cmd/$sub in
            run/ | check/ | platform/ | bench/sim | validate/) files='*.ini' ;;
            profile/time) ((n == 0)) && files='*.ini' ;;
            show/) ((n == 0)) && mapfile -t list < <(_dtsim_runs "$dtsim" "$db") && nosort=1 ;;
            devices/) ((n == 0)) && mapfile -t list < <(_dtsim_devices "$dtsim") ;;
            esac
        fi
        ;;
    esac

    COMPREPLY=()
    if [[ -n $files ]]; then
        compopt -o filenames 2>/dev/null
        case $files in
        dirs) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
        all) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
        *) mapfile -t COMPREPLY < <(compgen -f -X "!$files" -- "$cur"; compgen -d -- "$cur") ;;
        esac
    else
        for w in "${list[@]}"; do
            [[ $w == "$cur"* ]] && COMPREPLY+=("$w")
        done
        [[ -n $nospace ]] && compopt -o nospace 2>/dev/null
        # run ids in their order (1, 2, ..., 10), not sorted as text by bash
        [[ -n $nosort ]] && compopt -o nosort 2>/dev/null
    fi
    if [[ -n $opt ]]; then
        for i in "${!COMPREPLY[@]}"; do
            COMPREPLY[i]=$opt${COMPREPLY[i]}
        done
        cur=$opt$cur
    fi
    # bash replaces only what follows the last = or : of the word (when COMP_WORDBREAKS has
    # them): drop the part of cur before it from each answer
    local breaks=${COMP_WORDBREAKS//[^=:]/}
    if [[ -n $breaks && $cur == *["$breaks"]* ]]; then
        local head=${cur%"${cur##*["$breaks"]}"}
        for i in "${!COMPREPLY[@]}"; do
            COMPREPLY[i]=${COMPREPLY[i]#"$head"}
        done
    fi
    return 0
}

complete -F _dtsim dtsim
