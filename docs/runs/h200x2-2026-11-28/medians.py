import json,sys,glob,statistics as st
sys.path.insert(0,'/tmp'); 
def nt(path):
    rows={}
    for line in open(path):
        t=line.split()
        if len(t)>=12 and t[0].isdigit() and not line.startswith('#'):
            try: rows[int(t[0])]=float(t[5])
            except: pass
    return rows
def ls(path):
    d=json.load(open(path)); return {m['size_bytes']:m['extra']['time_us'] for m in d['measurements'] if not m['extra'].get('inplace')}
d=sys.argv[1]
table=[]
for label,ntpat,lspat in [(op+' eager 1 proc', f'{b}_g0_r*.txt', f'ls_{op}_g0_r*.json') for op,b in [('allgather','all_gather'),('alltoall','alltoall'),('sendrecv','sendrecv'),('allreduce','all_reduce'),('reduce_scatter','reduce_scatter')]] + [(op+f' {m} per GPU', f'mpi_{b}_g{g}_r*.txt', f'mpi_ls_{op}_g{g}_r*.json') for op,b in [('alltoall','alltoall'),('allgather','all_gather')] for g,m in [(0,'eager'),(20,'-G 20')]]:
    N=[nt(f) for f in sorted(glob.glob(d+'/'+ntpat))]; L=[ls(f) for f in sorted(glob.glob(d+'/'+lspat))]
    sizes=sorted(set.intersection(*[set(x) for x in N+L]))
    ratios=[]
    for s in sizes:
        a=st.median(x[s] for x in N); b=st.median(x[s] for x in L); ratios.append((s,a,b,a/b))
    low=[f"{s}:{r:.2f}" for s,a,b,r in ratios if r<0.97]
    print(f"{label:28s} rounds {len(N)}/{len(L)} min {min(r for *_,r in ratios):.2f} median {st.median(r for *_,r in ratios):.2f}; below 0.97: {' '.join(low) or 'none'}")
