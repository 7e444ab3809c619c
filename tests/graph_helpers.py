"""A reference for the tests of grouping: connected components by a breadth-first search,
sharing no code with neardup's union-find."""

from __future__ import annotations

from collections import deque

import numpy as np


def bfs_components(n, a, b) -> list[int]:
    """The smallest index of each node's component (nodes 0..n-1, edges a[i]–b[i])."""
    neighbours = [[] for _ in range(n)]
    for x, y in zip(np.asarray(a).tolist(), np.asarray(b).tolist()):
        neighbours[x].append(y)
        neighbours[y].append(x)
    labels = [-1] * n
    for start in range(n):  # ascending: the first node reached of a component is its smallest
        if labels[start] >= 0:
            continue
        labels[start] = start
        queue = deque([start])
        while queue:
            x = queue.popleft()
            for y in neighbours[x]:
                if labels[y] < 0:
                    labels[y] = start
                    queue.append(y)
    return labels
