"""The load benchmark's stdout table, built from the figures dict that goes to JSON."""

from __future__ import annotations

from typing import Any

TARGET_RATIO = 0.6
TARGET_PLAYERS = 6000
TARGET_IDLE_KIB = 20.0


def _ms(summary: dict[str, Any] | None, key: str) -> str:
    if not summary or summary.get(key) is None:
        return "-"
    return f"{summary[key]:.1f}"


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("MET" if ok else "MISSED")


def _race_rows(name: str, fig: dict[str, Any]) -> list[str]:
    rtt = fig.get("rtt")
    gen = f"{fig.get('generator_cpu_pct', 0):.0f}%"
    if fig.get("generator_saturated"):
        gen += " SATURATED"
    rows = [
        f"{name:<13}{fig['players']:>7} players {fig['spectators']:>5} spectators"
        f"  window {fig.get('window_s', 0):.0f} s, set-up {fig.get('setup_s', 0):.0f} s",
        f"{'':13}move RTT ms p50 {_ms(rtt, 'p50_ms')}  p99 {_ms(rtt, 'p99_ms')}"
        f"  p99.9 {_ms(rtt, 'p99_9_ms')}  ({rtt['count'] if rtt else 0} moves)",
        f"{'':13}accepted moves/s {fig['accepted_moves_per_s']:.0f}"
        f"  server frames/s {fig['server_frames_per_s']:.0f}"
        f"  rejected {fig.get('rejected_moves', 0)}",
        f"{'':13}server CPU {fig.get('server_cpu_pct')}% (kernel"
        f" {fig.get('server_cpu_system_pct')}% of it; +deal pool"
        f" {fig.get('server_children_cpu_pct')}%)  RSS {fig.get('server_rss_mib')} MiB"
        f"  generator CPU {gen}",
        f"{'':13}input log commits {fig.get('log_commits')}, over 50 ms"
        f" {fig.get('log_commits_over_50ms')} (each held its answers that long); fold steps"
        f" {fig.get('log_fold_steps')}, over 10 ms {fig.get('log_fold_steps_over_10ms')}",
        f"{'':13}taken by other processes on this shared machine: core 0"
        f" {fig.get('server_core_busy_by_others_pct')}%, core 1"
        f" {fig.get('generator_core_busy_by_others_pct')}%",
    ]
    mix = fig.get("accepted_by_action") or {}
    total = sum(mix.values())
    if total:
        shares = ", ".join(f"{a} {100 * n / total:.0f}%" for a, n in mix.items())
        rows.append(f"{'':13}accepted moves by kind: {shares}")
    if fig.get("fanout"):
        rows.append(
            f"{'':13}spectator fan-out ms p50 {_ms(fig['fanout'], 'p50_ms')}"
            f"  p99 {_ms(fig['fanout'], 'p99_ms')}"
        )
    if fig.get("room_start"):
        rows.append(
            f"{'':13}room start (dealing included) ms p50 {_ms(fig['room_start'], 'p50_ms')}"
            f"  p99 {_ms(fig['room_start'], 'p99_ms')}  ({fig.get('room_starts', 0)} starts,"
            f" {fig.get('start_failures', 0)} failed)"
        )
    return rows


def print_table(figures: dict[str, Any]) -> None:
    """Print every run's figures and the four targets."""
    lines = ["", "TriPeaks Race load benchmark", "=" * 78]
    mach = figures.get("machine", {})
    lines.append(
        f"machine: {mach.get('nproc')} cores, {mach.get('cpu_model')}, Python"
        f" {mach.get('python')}, {mach.get('loop')}, native build {mach.get('native', '?')};"
        " shared machine, load average at start"
        f" {mach.get('load_average_at_start')}"
    )
    transport = figures.get("scale", {}).get("transport", "tcp")
    lines.append(
        "players reach the server over "
        + ("its Unix socket, as nginx does in the deployment" if transport == "unix"
           else "loopback TCP")
        + " (echo and saturation: loopback TCP)"
    )
    echo = figures.get("echo")
    if echo:
        gen = " (generator SATURATED)" if echo.get("generator_saturated") else ""
        lines.append(
            f"{'echo':<13}{echo['connections']:>7} connections, {echo['frame_bytes']} B frames:"
            f" {echo['round_trips_per_s']:.0f} round trips/s, RTT p99"
            f" {_ms(echo.get('rtt'), 'p99_ms')} ms, server CPU {echo.get('server_cpu_pct')}%,"
            f" generator CPU {echo.get('generator_cpu_pct')}%{gen}; taken by others: core 0"
            f" {echo.get('server_core_busy_by_others_pct')}%, core 1"
            f" {echo.get('generator_core_busy_by_others_pct')}%"
        )
    idle = figures.get("idle")
    if idle:
        lines.append(
            f"{'idle':<13}{idle['players']:>7} players: RSS {idle['rss_before_mib']} ->"
            f" {idle['rss_after_mib']} MiB = {idle['kib_per_player']} KiB per player"
        )
    for name in ("human", "saturation", "interference"):
        if name in figures and "players" in figures[name]:
            lines += _race_rows(name, figures[name])
    inter = figures.get("interference", {})
    if inter.get("rtt_during_burst"):
        lines.append(
            f"{'':13}during the burst of {inter['burst_rooms']} starts: move RTT p99"
            f" {_ms(inter['rtt_during_burst'], 'p99_ms')} ms, before it"
            f" {_ms(inter.get('rtt_before_burst'), 'p99_ms')} ms"
            f" (x{inter.get('burst_rtt_ratio')})"
        )
    cap = figures.get("capacity")
    if cap:
        for step in cap["steps"]:
            if step.get("not_measured"):
                lines.append(f"{'capacity':<13}{step['players']:>7} players: NOT MEASURED"
                             f" ({step['not_measured']})")
                continue
            lines.append(
                f"{'capacity':<13}{step['players']:>7} players at 2 moves/s: p99"
                f" {step['p99_ms']} ms -> {'ok' if step['ok'] else 'over'}"
                f" (server CPU {step['server_cpu_pct']}%, kernel"
                f" {step.get('server_cpu_system_pct')}% of it, log commits over 50 ms"
                f" {step.get('log_commits_over_50ms')}, fold steps over 10 ms"
                f" {step.get('log_fold_steps_over_10ms')}, core 0 taken by others"
                f" {step.get('core_taken_by_others_pct')}%, generator {step['generator_cpu_pct']}%)"
            )
    lines += ["-" * 78, "targets"]
    ratio = figures.get("ratio_game_to_echo")
    lines.append(f"  game moves/s / echo round trips/s = {ratio} (>= {TARGET_RATIO}):"
                 f" {_verdict(None if ratio is None else ratio >= TARGET_RATIO)}")
    if figures.get("ratio_per_server_cpu") is not None:
        lines.append(f"    per second of server CPU: {figures['ratio_per_server_cpu']}")
    for reason in figures.get("ratio_disturbed_by") or ():
        lines.append(f"    NOT A CLEAN MEASURE: {reason}")
    if cap:
        lines += _capacity_verdicts(cap)
    if idle:
        kib = idle["kib_per_player"]
        lines.append(f"  KiB per idle player: {kib} (<= {TARGET_IDLE_KIB}):"
                     f" {_verdict(kib <= TARGET_IDLE_KIB)}")
    if inter:
        lines.append(f"  p99 move RTT during a burst of starts < 100 ms:"
                     f" {_verdict(inter.get('within_bound'))}")
        start = _ms(inter.get("room_start"), "p99_ms")
        lines.append(f"  p99 start -> every race_start in the burst < 500 ms ({start} ms):"
                     f" {_verdict(inter.get('burst_start_ok'))}")
        lines.append(f"  other rooms' move p99 during the burst within 2x of before"
                     f" (x{inter.get('burst_rtt_ratio')}): {_verdict(inter.get('burst_ratio_ok'))}")
    print("\n".join(lines))


def _capacity_verdicts(cap: dict[str, Any]) -> list[str]:
    """The capacity target (every run must hold) and the goal (NOT MEASURED said loudly)."""
    target, runs = cap.get("target_players", TARGET_PLAYERS), cap.get("target_runs", 1)
    held = cap.get("target_held_every_run", cap["largest_ok_players"] >= target)
    lines = [f"  {target} players at human pace, p99 < 50 ms in every one of {runs} runs:"
             f" {_verdict(held)} (largest that held: {cap['largest_ok_players']})"]
    goal = cap.get("goal_players")
    if goal is not None:
        if not cap.get("goal_measured", True):
            lines.append(f"  GOAL OF {goal} PLAYERS NOT MEASURED: NOT MET")
        else:
            lines.append(f"  goal of {goal} players: {_verdict(bool(cap.get('goal_ok')))}")
    return lines


def _cell(summary: dict[str, Any] | None, key: str) -> str:
    value = summary.get(key) if summary else None
    return "–" if value is None else f"{value:.1f}"


def _mix(fig: dict[str, Any]) -> str:
    mix = fig.get("accepted_by_action") or {}
    total = sum(mix.values())
    if not total:
        return "–"
    return " / ".join(f"{100 * mix.get(a, 0) / total:.0f}%" for a in ("play", "draw", "undo"))


def markdown(figures: dict[str, Any]) -> str:
    """The figures as the Markdown tables of docs/performance.md."""
    out = [
        "| run | players (+spectators) | moves/s | server frames/s | RTT p50 / p99 / p99.9 ms"
        " | fan-out p50 / p99 ms | room start p50 / p99 ms | server CPU (+pool) | server RSS"
        " | generator CPU | play / draw / undo |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("human", "saturation", "interference"):
        fig = figures.get(name)
        if not fig or "players" not in fig:
            continue
        rtt, fan, start = fig.get("rtt"), fig.get("fanout"), fig.get("room_start")
        out.append(
            f"| {name} | {fig['players']} (+{fig['spectators']})"
            f" | {fig['accepted_moves_per_s']:.0f}"
            f" | {fig['server_frames_per_s']:.0f}"
            f" | {_cell(rtt, 'p50_ms')} / {_cell(rtt, 'p99_ms')} / {_cell(rtt, 'p99_9_ms')}"
            f" | {_cell(fan, 'p50_ms')} / {_cell(fan, 'p99_ms')}"
            f" | {_cell(start, 'p50_ms')} / {_cell(start, 'p99_ms')}"
            f" | {fig['server_cpu_pct']}% (+{fig['server_children_cpu_pct']}%)"
            f" | {fig['server_rss_mib']} MiB | {fig['generator_cpu_pct']}% | {_mix(fig)} |"
        )
    echo, idle, cap = figures.get("echo"), figures.get("idle"), figures.get("capacity")
    inter = figures.get("interference", {})
    out += ["", "| figure | value |", "|---|---|"]
    if echo:
        out.append(
            f"| echo baseline ({echo['connections']} connections, {echo['frame_bytes']} B frames)"
            f" | {echo['round_trips_per_s']:.0f} round trips/s (server CPU"
            f" {echo['server_cpu_pct']}%, generator {echo['generator_cpu_pct']}%) |"
        )
    if "ratio_game_to_echo" in figures:
        out.append(f"| game moves/s ÷ echo round trips/s | {figures['ratio_game_to_echo']} |")
    if figures.get("ratio_per_server_cpu") is not None:
        out.append(f"| the same per second of server CPU | {figures['ratio_per_server_cpu']} |")
    if idle:
        out.append(
            f"| memory per idle connected player ({idle['players']} players) |"
            f" {idle['kib_per_player']} KiB |"
        )
    if cap:
        steps = ", ".join(
            f"{s['players']}: {s['p99_ms']} ms"
            f" {'NOT MEASURED' if s['ok'] is None else 'ok' if s['ok'] else 'over'}"
            for s in cap["steps"]
        )
        out.append(f"| capacity at 2 moves/s, p99 < 50 ms | {cap['largest_ok_players']} players"
                   f" (p99 by step: {steps}) |")
    if inter.get("rtt_during_burst"):
        out.append(
            f"| p99 move RTT in other rooms during {inter['burst_rooms']} starts (before) |"
            f" {_cell(inter['rtt_during_burst'], 'p99_ms')} ms"
            f" ({_cell(inter.get('rtt_before_burst'), 'p99_ms')} ms) |"
        )
        out.append(
            f"| p99 start to every race_start, {inter['burst_rooms']} starts at once |"
            f" {_cell(inter.get('room_start'), 'p99_ms')} ms |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    import json
    import sys
    from pathlib import Path

    print(markdown(json.loads(Path(sys.argv[1]).read_text())))
