"""Bundle size per target from bench/builder/run.sh's sizes.tsv, as an SVG of grouped bars on a
log scale: the code objects, clang-offload-bundler --compress on them, and our bundle (no
plotting library, like bench/plot_moe.py).
Usage: python3 bench/builder/plot_sizes.py OUT/sizes.tsv docs/builder_bundle_size.svg"""
import math
import sys

W, L, R, T, B = 800, 250, 70, 40, 50  # width and margins
ROW, BAR = 66, 16                      # height of a row of three bars, of one bar
SERIES = [("code objects", "#bbbbbb"), ("clang-offload-bundler --compress", "#ff7f0e"),
          ("aot-bundle", "#1f77b4")]


def read(path):
    with open(path) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [(name, [int(v) for v in values]) for name, *values in rows]


def svg(rows):
    h = T + ROW * len(rows) + B
    values = [v for _, vs in rows for v in vs]
    lo = 10 ** math.floor(math.log10(min(values) / 2))  # bytes at the axis's left end
    hi = 10 ** math.ceil(math.log10(max(values)))
    x = lambda v: L + math.log10(v / lo) / math.log10(hi / lo) * (W - L - R)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{h}" fill="white"/>',
           f'<text x="{L}" y="{T - 22}" font-size="14">bundle size per target</text>']
    for i, (label, color) in enumerate(SERIES):  # legend
        lx = L + i * 170
        out.append(f'<rect x="{lx}" y="{T - 14}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{lx + 14}" y="{T - 5}" font-size="11">{label}</text>')
    for r, (name, values) in enumerate(rows):
        y0 = T + 6 + r * ROW
        out.append(f'<text x="{L - 8}" y="{y0 + 1.5 * BAR + 4}" text-anchor="end">{name}</text>')
        for i, v in enumerate(values):
            y = y0 + i * BAR
            out.append(f'<rect x="{L}" y="{y}" width="{x(v) - L:.1f}" height="{BAR - 2}" fill="{SERIES[i][1]}"/>')
            out.append(f'<text x="{x(v) + 4:.1f}" y="{y + BAR - 5}" font-size="11">{v / 1000:.1f}</text>')
    for e in range(round(math.log10(lo)), round(math.log10(hi)) + 1):  # a gridline a decade
        gx = x(10 ** e)
        out.insert(2, f'<line x1="{gx:.1f}" y1="{T}" x2="{gx:.1f}" y2="{h - B}" stroke="#ddd"/>')
        out.append(f'<text x="{gx:.1f}" y="{h - B + 16}" text-anchor="middle">{10 ** e / 1000:g}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{h - 12}" text-anchor="middle">KB (log scale)</text>')
    out.append(f'<line x1="{L}" y1="{T}" x2="{L}" y2="{h - B}" stroke="#444"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    with open(sys.argv[2], "w") as f:
        f.write(svg(read(sys.argv[1])))


if __name__ == "__main__":
    main()
