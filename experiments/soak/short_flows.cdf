# Short flows only, for the soak (docs/soak.md): 1 to 20 packets, mostly small.
# Format: size_bytes cumulative_probability (linear interpolation between points).
1000 0.0
1460 0.3
5000 0.6
10000 0.8
29200 1.0
