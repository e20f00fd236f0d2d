# throwaway diagnostic (never committed): print fragment allocations, frees, and pages created / reinitialized by relation
import sys
root=sys.argv[1]
p=root+'/crates/engine/src/page/store.rs'
s=open(p).read()
ms='std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()'
old="""        let (block, _) = Self::take(&r, |free, n| free.take_fragment(hint, n));
        Ok(PageId::new(rel, block))"""
assert old in s
s=s.replace(old,"""        let (block, _) = Self::take(&r, |free, n| free.take_fragment(hint, n));
        if std::env::var_os("DIAG_UNDO_ALLOC").is_some() { eprintln!("DIAG alloc {} {block} {rel} hint {hint}", %s); }
        Ok(PageId::new(rel, block))""" % ms,1)
old="""        let mut free = r.free.lock();
        // Freeing a free block again changes nothing (the free list is a set)."""
assert old in s
s=s.replace(old,"""        if std::env::var_os("DIAG_UNDO_ALLOC").is_some() { eprintln!("DIAG free {} {} {}", %s, id.block, id.rel); }
        let mut free = r.free.lock();
        // Freeing a free block again changes nothing (the free list is a set).""" % ms,1)
open(p,'w').write(s)
p=root+'/crates/engine/src/buffer/pool.rs'
s=open(p).read()
old="""                } else if create {
                    self.replacer.reinitialized(f)"""
assert old in s
s=s.replace(old,"""                } else if create {
                    if std::env::var_os("DIAG_UNDO_ALLOC").is_some() { eprintln!("DIAG reinit {} {} {}", %s, id.block, id.rel); }
                    self.replacer.reinitialized(f)""" % ms,1)
old="""                    if create {
                        self.replacer.created(f);"""
assert old in s
s=s.replace(old,"""                    if create {
                        if std::env::var_os("DIAG_UNDO_ALLOC").is_some() { eprintln!("DIAG created {} {} {}", %s, id.block, id.rel); }
                        self.replacer.created(f);""" % ms,1)
open(p,'w').write(s)
print('patched')
