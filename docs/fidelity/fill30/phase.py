"""Splits and merges by the time since the start of each purge burst, from the series
extracts (series/NAME.csv, 0.1 s samples). A burst starts at the first sample with 3 or
more merges after 4 samples with fewer. Usage: python3 phase.py series/fine-m.csv ..."""
import csv, sys
for f in sys.argv[1:]:
    rows = list(csv.DictReader(open(f)))
    s = [float(r['index_page_splits']) for r in rows]
    m = [float(r['index_page_merge_successful']) for r in rows]
    tx = [float(r['transactions']) for r in rows]
    starts = [i for i in range(4, len(rows)) if m[i] >= 3 and all(m[j] < 3 for j in range(i - 4, i))]
    bins = {}
    for a, b in zip(starts, starts[1:]):
        for i in range(a, b):
            k = min(i - a, 10)
            acc = bins.setdefault(k, [0, 0, 0, 0])
            acc[0] += s[i]; acc[1] += m[i]; acc[2] += tx[i]; acc[3] += 1
    print(f, 'bursts', len(starts), 'splits/txn %.3f' % (sum(s) / sum(tx)))
    for k in sorted(bins):
        S, M, T, N = bins[k]
        print('   +%.1f s  splits/sample %5.2f  merges/sample %5.2f  txn/sample %5.1f  splits/txn %.3f'
              % (k / 10, S / N, M / N, T / N, S / T))
