"""Formatting shared by report.py's sections: sizes, numbers and markdown tables, and the
matplotlib helpers (imported only when a plot is drawn)."""
import os

KiB = 1024
MiB = 1024 * 1024


def size_label(n):
    if n >= MiB and n % MiB == 0:
        return f"{n // MiB} MiB"
    if n >= KiB and n % KiB == 0:
        return f"{n // KiB} KiB"
    return f"{n} B"


def tokens_label(n):
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


def num(v, digits=3):
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    for r in rows:
        out.append("| " + " | ".join(num(c) if not isinstance(c, str) else c for c in r) + " |")
    return "\n".join(out)


def size_ticks(ax, sizes):
    sizes = sorted(set(sizes))
    ax.set_xticks([x / KiB for x in sizes])
    ax.set_xticklabels([size_label(x) for x in sizes])
    ax.minorticks_off()


def save_figure(fig, ax, out_dir, png, xlabel, ylabel, title, legend_size=8):
    """Labels, legend and title on `ax`; writes `fig` to out_dir/png and closes it; returns png."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=legend_size)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, png), dpi=100)
    pyplot().close(fig)
    return png


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
