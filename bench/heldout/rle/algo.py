def rle_encode(s):
    """Run-length encode a string into a list of (char, count) pairs."""
    if not s:
        return []
    runs = []
    prev = s[0]
    count = 1
    for ch in s[1:]:
        if ch == prev:
            count += 1
        else:
            runs.append((prev, count))
            prev = ch
            count = 0
    runs.append((prev, count))
    return runs


def rle_decode(runs):
    return "".join(ch * n for ch, n in runs)
