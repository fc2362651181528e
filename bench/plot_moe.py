"""Time against tokens for topk_softmax and moe_sorting, from a bench_moe.py JSON, as an SVG
with log-log axes (no plotting library: the device machine and CI have none to spare).
Usage: python3 bench/plot_moe.py docs/results/bench_moe_h200_2026-12-04.json docs/moe_time_vs_tokens.svg"""
import json
import math
import sys

W, H, L, R, T, B = 720, 440, 70, 200, 40, 50  # size and margins
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]


def series(rows):
    topk = [r for r in rows if r["op"] == "topk_softmax"]
    sort = [r for r in rows if r["op"] == "moe_sorting"]
    return [("topk_softmax, ours (stream)", [(r["tokens"], r["ours_stream_us"]) for r in topk]),
            ("topk_softmax, torch (stream)", [(r["tokens"], r["torch_stream_us"]) for r in topk]),
            ("moe_sorting, ours (stream)", [(r["tokens"], r["ours_stream_us"]) for r in sort]),
            ("moe_sorting, torch (eager)", [(r["tokens"], r["torch_us"]) for r in sort])]


def scale(lo, hi, a, b):
    """Maps log10 of [lo, hi] onto [a, b]."""
    return lambda v: a + (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (b - a)


def svg(data, title):
    xs = [x for _, pts in data for x, _ in pts]
    ys = [y for _, pts in data for _, y in pts]
    x0, x1 = 10 ** math.floor(math.log10(min(xs))), 10 ** math.ceil(math.log10(max(xs)))
    y0, y1 = 10 ** math.floor(math.log10(min(ys))), 10 ** math.ceil(math.log10(max(ys)))
    fx, fy = scale(x0, x1, L, W - R), scale(y0, y1, H - B, T)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="{T - 15}" font-size="14">{title}</text>']
    for e in range(round(math.log10(x0)), round(math.log10(x1)) + 1):
        x = fx(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H - B}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{H - B + 16}" text-anchor="middle">1e{e}</text>')
    for e in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        y = fy(10 ** e)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">tokens</text>')
    out.append(f'<text x="16" y="{(T + H - B) / 2}" transform="rotate(-90 16 {(T + H - B) / 2})" '
               f'text-anchor="middle">µs per call</text>')
    for i, (name, pts) in enumerate(data):
        c = COLORS[i % len(COLORS)]
        dash = ' stroke-dasharray="5,4"' if "torch" in name else ""
        path = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        out += [f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="3" fill="{c}"/>' for x, y in pts]
        ly = T + 10 + 20 * i
        out.append(f'<line x1="{W - R + 10}" y1="{ly}" x2="{W - R + 35}" y2="{ly}" stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{W - R + 40}" y="{ly + 4}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    d = json.load(open(sys.argv[1]))
    title = f"experts 256, k 8 ({d['device']}, {d['date']})"
    with open(sys.argv[2], "w") as f:
        f.write(svg(series(d["rows"]), title))


if __name__ == "__main__":
    main()
