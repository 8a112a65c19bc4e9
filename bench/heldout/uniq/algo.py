def uniq(xs):
    """Drop consecutive duplicates, like Unix uniq: [1,1,2,1] -> [1,2,1]."""
    out = []
    for i in range(len(xs)):
        if i == 1 or xs[i] != xs[i - 1]:
            out.append(xs[i])
    return out
