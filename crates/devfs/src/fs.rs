//! The file system: a directory tree in memory whose regular files are files of the
//! virtual NVMe device ([`Nvme`]), served to the kernel through FUSE (`fuser`).
//!
//! # What goes through the device
//! Every `read`, `write`, `fsync`/`fdatasync` (and `fsyncdir`) of a FUSE request is one
//! call of the engine's [`Nvme`] — the model the presets run on: exact counting in 4 KiB
//! blocks and requests (split at `iop_max_bytes`), transparent compression of every 4 KiB
//! block written — after the engine's [`Throttle`] (bandwidth per direction, latency,
//! queue depth) when throttling is on. `fallocate` (mode 0) and `truncate` change only the
//! size (sparse, no device I/O); a truncation to 0 trims the file's blocks from the
//! compression model. Metadata (names, modes, owners, sizes) is kept in memory and costs
//! no device I/O: this is what "file-system mode" leaves out (docs/storage.md).
//!
//! # Invariants
//! 1. A node's `Content::File(id)` names a device file that exists until the node is
//!    dropped, which happens when its last name is gone and no handle is open.
//! 2. Sizes are the file system's: a read is cut at the size, and the bytes between the
//!    end of what was written and the size read as zeros ([`SparseBacking`]).
//! 3. Counts of a dropped node stay under the path it last had ([`Counting::removed`]).
//!
//! # Locking
//! One `RwLock` over the tree, never held across a device call; the counters' mutex is
//! taken after the tree lock is released.

use crate::backing::SparseBacking;
use crate::counts::{Counting, DeviceCounts, Request as Counted};
use fuser::{
    BsdFileFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
    WriteFlags,
};
use mvcclab_engine::device::{requests, CompressionTotals, DeviceError, FileId, Nvme, Throttle};
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How long the kernel may cache names and attributes. Every change goes through this
/// daemon, so the cache is never stale for long; 1 s is what libfuse's examples use.
const TTL: Duration = Duration::from_secs(1);

/// Open flags of a file: FOPEN_KEEP_CACHE, so that the kernel keeps a file's page cache
/// across opens, as it does on a block-device file system. Without it Linux drops the
/// cache at every open (fs/fuse/file.c `fuse_finish_open` → `invalidate_inode_pages2`),
/// and each new PostgreSQL process that opens a relation file (a backend, an autovacuum
/// worker) would send every later read of it to the device. Every write reaches the
/// files through this mount, so the kept pages stay true.
fn keep_cache() -> FopenFlags {
    FopenFlags::FOPEN_KEEP_CACHE
}

/// The device file that directory syncs are counted against (a directory has no bytes).
const DIR_SYNC_FILE: FileId = 0;

enum Content {
    Dir(BTreeMap<OsString, u64>),
    File(FileId),
    Symlink(PathBuf),
}

struct Node {
    parent: u64,
    name: OsString,
    kind: FileType,
    perm: u16,
    uid: u32,
    gid: u32,
    nlink: u32,
    size: u64,
    atime: SystemTime,
    mtime: SystemTime,
    ctime: SystemTime,
    content: Content,
    open: u32,
}

struct Tree {
    nodes: HashMap<u64, Node>,
    next_ino: u64,
    next_file: FileId,
}

impl Tree {
    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let n = self.nodes.get(&ino)?;
        Some(FileAttr {
            ino: INodeNo(ino),
            size: n.size,
            blocks: n.size.div_ceil(4096) * 8,
            atime: n.atime,
            mtime: n.mtime,
            ctime: n.ctime,
            crtime: n.ctime,
            kind: n.kind,
            perm: n.perm,
            nlink: n.nlink,
            uid: n.uid,
            gid: n.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    fn path(&self, mut ino: u64) -> Option<String> {
        let mut parts = Vec::new();
        while ino != INodeNo::ROOT.0 {
            let n = self.nodes.get(&ino)?;
            parts.push(n.name.to_string_lossy().into_owned());
            ino = n.parent;
        }
        parts.reverse();
        Some(parts.join("/"))
    }

    fn child(&self, parent: u64, name: &OsStr) -> Result<u64, Errno> {
        match &self.nodes.get(&parent).ok_or(Errno::ENOENT)?.content {
            Content::Dir(c) => c.get(name).copied().ok_or(Errno::ENOENT),
            _ => Err(Errno::ENOTDIR),
        }
    }
}

/// The shared state of a mounted device: the tree, the device and its counters.
pub struct DevFs {
    nvme: Nvme,
    backing: Arc<SparseBacking>,
    throttle: Option<Throttle>,
    throttling: AtomicBool,
    counting: Counting,
    tree: RwLock<Tree>,
}

fn errno(e: DeviceError) -> Errno {
    match e {
        DeviceError::Io { source, .. } => Errno::from(source),
        _ => Errno::EIO,
    }
}

impl DevFs {
    /// A file system with an empty root directory (mode 0755, owned by root) over `nvme`,
    /// whose backing is `backing`; `throttle` applies once [`DevFs::set_throttling`] is on.
    ///
    /// Errors: the backing failing to create the directory-sync file.
    pub fn new(
        nvme: Nvme,
        backing: Arc<SparseBacking>,
        throttle: Option<Throttle>,
        iop_max_bytes: usize,
    ) -> Result<Self, DeviceError> {
        nvme.create(DIR_SYNC_FILE)?;
        let now = SystemTime::now();
        let mut nodes = HashMap::new();
        nodes.insert(
            INodeNo::ROOT.0,
            Node {
                parent: INodeNo::ROOT.0,
                name: OsString::new(),
                kind: FileType::Directory,
                perm: 0o755,
                uid: 0,
                gid: 0,
                nlink: 2,
                size: 4096,
                atime: now,
                mtime: now,
                ctime: now,
                content: Content::Dir(BTreeMap::new()),
                open: 0,
            },
        );
        Ok(DevFs {
            nvme,
            backing,
            throttle,
            throttling: AtomicBool::new(false),
            counting: Counting::new(iop_max_bytes),
            tree: RwLock::new(Tree {
                nodes,
                next_ino: 2,
                next_file: DIR_SYNC_FILE + 1,
            }),
        })
    }

    /// Turns the throttle on or off (setup runs unthrottled; the measured phases not).
    pub fn set_throttling(&self, on: bool) {
        self.throttling.store(on, Ordering::SeqCst);
    }

    /// The counts now.
    pub fn counts(&self) -> DeviceCounts {
        let tree = self.tree.read();
        let mut c = self
            .counting
            .snapshot(|ino| tree.path(ino), self.nvme.compression_totals());
        // Physical bytes are computed by the Nvme's compression model per write.
        c.total.io.write_physical_bytes = self.nvme.stats().snapshot().total().write_physical_bytes;
        c
    }

    /// Counts the InnoDB page images of every read and write by index from now on
    /// ([`DeviceCounts::innodb_pages`]; `innodb_pages` module doc). A CRC-32C per 16 KiB
    /// candidate, so only for a MariaDB server.
    pub fn count_innodb_pages(&self) {
        self.counting.count_innodb_pages();
    }

    /// Counts the 4 KiB blocks of the file at `path` (relative to the root, created
    /// later) one by one ([`crate::BlockMap`]): block-device mode.
    pub fn map_blocks_of(&self, path: &str) {
        *self.counting.mapped_path.lock() = Some(path.to_string());
    }

    /// Counts the requests of the existing file at `path` (relative to the root) by part:
    /// `part(offset, data)` names each request's part, and the counts appear under
    /// `path#part` in `by_file`. One file at a time; a later call replaces it.
    ///
    /// Errors: `ENOENT` when no file has that path.
    pub fn split_file(&self, path: &str, part: crate::PartFn) -> Result<(), Errno> {
        let ino = {
            let t = self.tree.read();
            let found = t
                .nodes
                .iter()
                .filter(|(_, n)| matches!(n.content, Content::File(_)))
                .map(|(ino, _)| *ino)
                .find(|ino| t.path(*ino).as_deref() == Some(path));
            found.ok_or(Errno::ENOENT)?
        };
        self.counting.split_inode(ino, part);
        Ok(())
    }

    /// The per-block counts of the mapped file so far (empty when none is mapped).
    pub fn block_map(&self) -> crate::BlockMap {
        self.counting.block_map()
    }

    /// Logical and physical bytes held by each file of the tree, by its path (empty
    /// without compression accounting).
    pub fn compression_by_path(&self) -> BTreeMap<String, CompressionTotals> {
        let by_id = self.nvme.compression_totals_by_file();
        let tree = self.tree.read();
        tree.nodes
            .iter()
            .filter_map(|(ino, n)| match n.content {
                Content::File(id) => Some((tree.path(*ino)?, *by_id.get(&id)?)),
                _ => None,
            })
            .collect()
    }

    /// The device below.
    pub fn nvme(&self) -> &Nvme {
        &self.nvme
    }

    fn throttle(&self, write: bool, bytes: usize) -> u64 {
        match &self.throttle {
            Some(t) if self.throttling.load(Ordering::Relaxed) => t.serve(
                write,
                bytes,
                requests(bytes, self.counting.iop_max_bytes).max(1),
            ),
            _ => 0,
        }
    }

    fn new_node(
        &self,
        req: &Request,
        parent: u64,
        name: &OsStr,
        kind: FileType,
        perm: u16,
        content: impl FnOnce(&mut Tree) -> Content,
    ) -> Result<FileAttr, Errno> {
        let mut t = self.tree.write();
        let p = t.nodes.get(&parent).ok_or(Errno::ENOENT)?;
        let (pgid, setgid) = (p.gid, p.perm & 0o2000 != 0);
        match &p.content {
            Content::Dir(c) if c.contains_key(name) => return Err(Errno::EEXIST),
            Content::Dir(_) => {}
            _ => return Err(Errno::ENOTDIR),
        }
        let ino = t.next_ino;
        t.next_ino += 1;
        let content = content(&mut t);
        let now = SystemTime::now();
        let is_dir = kind == FileType::Directory;
        t.nodes.insert(
            ino,
            Node {
                parent,
                name: name.to_owned(),
                kind,
                perm: perm & 0o7777,
                uid: req.uid(),
                gid: if setgid { pgid } else { req.gid() },
                nlink: if is_dir { 2 } else { 1 },
                size: if is_dir { 4096 } else { 0 },
                atime: now,
                mtime: now,
                ctime: now,
                content,
                open: 0,
            },
        );
        let p = t.nodes.get_mut(&parent).ok_or(Errno::ENOENT)?;
        if let Content::Dir(c) = &mut p.content {
            c.insert(name.to_owned(), ino);
        }
        if is_dir {
            p.nlink += 1;
        }
        p.mtime = now;
        p.ctime = now;
        t.attr(ino).ok_or(Errno::EIO)
    }

    fn new_file(
        &self,
        req: &Request,
        parent: u64,
        name: &OsStr,
        perm: u16,
    ) -> Result<FileAttr, Errno> {
        let mut created = None;
        let r = self.new_node(req, parent, name, FileType::RegularFile, perm, |t| {
            let id = t.next_file;
            t.next_file += 1;
            created = Some(id);
            Content::File(id)
        });
        if let Some(id) = created {
            if let Err(e) = self.nvme.create(id) {
                return Err(errno(e));
            }
        }
        if let Ok(a) = &r {
            let mapped = self.counting.mapped_path.lock().clone();
            if mapped.is_some() && mapped == self.tree.read().path(a.ino.0) {
                self.counting.map_inode(a.ino.0);
            }
        }
        r
    }

    /// Drops `ino` if it has no name and no open handle (invariant 1); its counts stay
    /// under `path` (the path it had when its last name went; invariant 3).
    fn drop_if_orphan(&self, t: &mut Tree, ino: u64, path: Option<String>) {
        let orphan = t
            .nodes
            .get(&ino)
            .is_some_and(|n| n.nlink == 0 && n.open == 0);
        if !orphan {
            return;
        }
        let path = path.or_else(|| t.path(ino));
        if let Some(n) = t.nodes.remove(&ino) {
            if let Some(path) = path {
                self.counting.removed(ino, path);
            }
            if let Content::File(id) = n.content {
                let _ = self.nvme.remove(id);
            }
        }
    }

    /// Removes name `name` from `parent`; for a directory only when it is empty.
    fn remove_name(&self, parent: u64, name: &OsStr, dir: bool) -> Result<(), Errno> {
        let mut t = self.tree.write();
        let ino = t.child(parent, name)?;
        let n = t.nodes.get(&ino).ok_or(Errno::ENOENT)?;
        match (&n.content, dir) {
            (Content::Dir(c), true) if !c.is_empty() => return Err(Errno::ENOTEMPTY),
            (Content::Dir(_), false) => return Err(Errno::EISDIR),
            (Content::Dir(_), true) => {}
            (_, true) => return Err(Errno::ENOTDIR),
            _ => {}
        }
        self.unlink_locked(&mut t, parent, name, ino);
        Ok(())
    }

    fn unlink_locked(&self, t: &mut Tree, parent: u64, name: &OsStr, ino: u64) {
        // Keep the path for the counts before the name goes.
        let path = t.path(ino);
        let now = SystemTime::now();
        let mut was_dir = false;
        if let Some(n) = t.nodes.get_mut(&ino) {
            was_dir = n.kind == FileType::Directory;
            n.nlink = if was_dir {
                0
            } else {
                n.nlink.saturating_sub(1)
            };
            n.ctime = now;
        }
        if let Some(p) = t.nodes.get_mut(&parent) {
            if let Content::Dir(c) = &mut p.content {
                c.remove(name);
            }
            if was_dir {
                p.nlink = p.nlink.saturating_sub(1);
            }
            p.mtime = now;
            p.ctime = now;
        }
        self.drop_if_orphan(t, ino, path);
    }

    /// An fsync of inode `ino` (device file `id`) by process `pid`: throttled, synced and
    /// counted.
    fn sync(&self, ino: u64, id: FileId, pid: u32) -> Result<(), Errno> {
        let waited = self.throttle(true, 0);
        self.nvme.sync(id).map_err(errno)?;
        self.counting.count(ino, pid, Counted::Sync, waited, &[]);
        Ok(())
    }

    fn file_of(&self, ino: u64) -> Result<(FileId, u64), Errno> {
        let t = self.tree.read();
        let n = t.nodes.get(&ino).ok_or(Errno::ENOENT)?;
        match n.content {
            Content::File(id) => Ok((id, n.size)),
            Content::Dir(_) => Err(Errno::EISDIR),
            Content::Symlink(_) => Err(Errno::EINVAL),
        }
    }

    fn set_size(&self, ino: u64, size: u64) -> Result<(), Errno> {
        let (id, old) = self.file_of(ino)?;
        if size < old {
            if size == 0 {
                // Truncation to empty frees every block: TRIM in the compression model.
                self.nvme.remove(id).map_err(errno)?;
                self.nvme.create(id).map_err(errno)?;
            } else {
                self.backing.truncate(id, size).map_err(errno)?;
            }
        }
        let mut t = self.tree.write();
        if let Some(n) = t.nodes.get_mut(&ino) {
            n.size = size;
            let now = SystemTime::now();
            n.mtime = now;
            n.ctime = now;
        }
        Ok(())
    }
}

/// The FUSE side: a handle on the shared [`DevFs`].
pub(crate) struct FsHandle(pub(crate) Arc<DevFs>);

fn time(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => SystemTime::now(),
    }
}

impl Filesystem for FsHandle {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // 1 MiB writes where the kernel allows (FUSE_MAX_PAGES); the rest stays default.
        let _ = config.set_max_write(1 << 20);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let t = self.0.tree.read();
        match t
            .child(parent.0, name)
            .and_then(|i| t.attr(i).ok_or(Errno::ENOENT))
        {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.0.tree.read().attr(ino.0) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if let Some(s) = size {
            if let Err(e) = self.0.set_size(ino.0, s) {
                return reply.error(e);
            }
        }
        let mut t = self.0.tree.write();
        let Some(n) = t.nodes.get_mut(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let now = SystemTime::now();
        if let Some(m) = mode {
            n.perm = (m & 0o7777) as u16;
            n.ctime = now;
        }
        if let Some(u) = uid {
            n.uid = u;
            n.ctime = now;
        }
        if let Some(g) = gid {
            n.gid = g;
            n.ctime = now;
        }
        if let Some(a) = atime {
            n.atime = time(a);
        }
        if let Some(m) = mtime {
            n.mtime = time(m);
        }
        match t.attr(ino.0) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let t = self.0.tree.read();
        match t.nodes.get(&ino.0).map(|n| &n.content) {
            Some(Content::Symlink(p)) => reply.data(p.as_os_str().as_encoded_bytes()),
            Some(_) => reply.error(Errno::EINVAL),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(Errno::EPERM);
        }
        match self.0.new_file(req, parent.0, name, (mode & !umask) as u16) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        match self.0.new_node(
            req,
            parent.0,
            name,
            FileType::Directory,
            (mode & !umask) as u16,
            |_| Content::Dir(BTreeMap::new()),
        ) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.0.remove_name(parent.0, name, false) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.0.remove_name(parent.0, name, true) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        let target = target.to_path_buf();
        let len = target.as_os_str().len() as u64;
        match self
            .0
            .new_node(req, parent.0, link_name, FileType::Symlink, 0o777, |_| {
                Content::Symlink(target)
            }) {
            Ok(mut a) => {
                if let Some(n) = self.0.tree.write().nodes.get_mut(&a.ino.0) {
                    n.size = len;
                }
                a.size = len;
                reply.entry(&TTL, &a, Generation(0))
            }
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if flags.intersects(RenameFlags::RENAME_EXCHANGE | RenameFlags::RENAME_WHITEOUT) {
            return reply.error(Errno::EINVAL);
        }
        let mut t = self.0.tree.write();
        let ino = match t.child(parent.0, name) {
            Ok(i) => i,
            Err(e) => return reply.error(e),
        };
        if !matches!(
            t.nodes.get(&newparent.0).map(|n| &n.content),
            Some(Content::Dir(_))
        ) {
            return reply.error(Errno::ENOTDIR);
        }
        let is_dir = t
            .nodes
            .get(&ino)
            .is_some_and(|n| n.kind == FileType::Directory);
        if let Ok(old) = t.child(newparent.0, newname) {
            if old == ino {
                return reply.ok();
            }
            if flags.contains(RenameFlags::RENAME_NOREPLACE) {
                return reply.error(Errno::EEXIST);
            }
            let old_dir = match t.nodes.get(&old).map(|n| &n.content) {
                Some(Content::Dir(c)) if !c.is_empty() => return reply.error(Errno::ENOTEMPTY),
                Some(Content::Dir(_)) => true,
                _ => false,
            };
            if old_dir != is_dir {
                return reply.error(if is_dir {
                    Errno::ENOTDIR
                } else {
                    Errno::EISDIR
                });
            }
            self.0.unlink_locked(&mut t, newparent.0, newname, old);
        }
        let now = SystemTime::now();
        if let Some(Content::Dir(c)) = t.nodes.get_mut(&parent.0).map(|n| &mut n.content) {
            c.remove(name);
        }
        if let Some(p) = t.nodes.get_mut(&parent.0) {
            p.mtime = now;
            if is_dir {
                p.nlink = p.nlink.saturating_sub(1);
            }
        }
        if let Some(p) = t.nodes.get_mut(&newparent.0) {
            if let Content::Dir(c) = &mut p.content {
                c.insert(newname.to_owned(), ino);
            }
            p.mtime = now;
            if is_dir {
                p.nlink += 1;
            }
        }
        if let Some(n) = t.nodes.get_mut(&ino) {
            n.parent = newparent.0;
            n.name = newname.to_owned();
            n.ctime = now;
        }
        reply.ok()
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.0.tree.write().nodes.get_mut(&ino.0) {
            Some(n) => {
                n.open += 1;
                reply.opened(FileHandle(0), keep_cache())
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let (id, fsize) = match self.0.file_of(ino.0) {
            Ok(x) => x,
            Err(e) => return reply.error(e),
        };
        let n = fsize.saturating_sub(offset).min(size as u64) as usize;
        let mut buf = vec![0u8; n];
        if n > 0 {
            let waited = self.0.throttle(false, n);
            if let Err(e) = self.0.nvme.read_at(id, offset, &mut buf) {
                return reply.error(errno(e));
            }
            self.0.counting.count(
                ino.0,
                req.pid(),
                Counted::Read { offset, len: n },
                waited,
                &buf,
            );
        }
        reply.data(&buf)
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let (id, _) = match self.0.file_of(ino.0) {
            Ok(x) => x,
            Err(e) => return reply.error(e),
        };
        let waited = self.0.throttle(true, data.len());
        if let Err(e) = self.0.nvme.write_at(id, offset, data) {
            return reply.error(errno(e));
        }
        self.0.counting.count(
            ino.0,
            req.pid(),
            Counted::Write {
                offset,
                len: data.len(),
            },
            waited,
            data,
        );
        let end = offset + data.len() as u64;
        if let Some(n) = self.0.tree.write().nodes.get_mut(&ino.0) {
            n.size = n.size.max(end);
            n.mtime = SystemTime::now();
        }
        reply.written(data.len() as u32)
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok()
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let mut t = self.0.tree.write();
        if let Some(n) = t.nodes.get_mut(&ino.0) {
            n.open = n.open.saturating_sub(1);
        }
        self.0.drop_if_orphan(&mut t, ino.0, None);
        reply.ok()
    }

    fn fsync(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self
            .0
            .file_of(ino.0)
            .and_then(|(id, _)| self.0.sync(ino.0, id, req.pid()))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.0.tree.read().nodes.get(&ino.0).map(|n| &n.content) {
            Some(Content::Dir(_)) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Some(_) => reply.error(Errno::ENOTDIR),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let t = self.0.tree.read();
        let Some(n) = t.nodes.get(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let Content::Dir(children) = &n.content else {
            return reply.error(Errno::ENOTDIR);
        };
        let mut entries: Vec<(u64, FileType, OsString)> = vec![
            (ino.0, FileType::Directory, ".".into()),
            (n.parent, FileType::Directory, "..".into()),
        ];
        for (name, c) in children {
            if let Some(cn) = t.nodes.get(c) {
                entries.push((*c, cn.kind, name.clone()));
            }
        }
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, &name) {
                break;
            }
        }
        reply.ok()
    }

    fn fsyncdir(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.0.sync(ino.0, DIR_SYNC_FILE, req.pid()) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // With a backing directory, its file system's space is the device's (a full
        // directory gives ENOSPC to the writer); in memory, 1 TiB is shown.
        let (blocks, free) = self
            .0
            .backing
            .dir()
            .and_then(|d| statvfs(d).ok())
            .unwrap_or((1 << 28, 1 << 28));
        let files = self.0.tree.read().nodes.len() as u64;
        reply.statfs(
            blocks,
            free,
            free,
            files + (1 << 20),
            1 << 20,
            4096,
            255,
            4096,
        )
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        // `default_permissions` lets the kernel check modes and owners.
        reply.ok()
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        match self.0.new_file(req, parent.0, name, (mode & !umask) as u16) {
            Ok(a) => {
                if let Some(n) = self.0.tree.write().nodes.get_mut(&a.ino.0) {
                    n.open += 1;
                }
                reply.created(&TTL, &a, Generation(0), FileHandle(0), keep_cache())
            }
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        // Mode 0 reserves space and grows the size; KEEP_SIZE reserves only. Both are
        // sparse here: no bytes are written, so no device I/O is counted. Punching holes
        // and the other modes are not offered (EOPNOTSUPP, as on file systems without them).
        let size = match self.0.file_of(ino.0) {
            Ok((_, s)) => s,
            Err(e) => return reply.error(e),
        };
        match mode {
            0 => {
                let end = offset + length;
                if end > size {
                    if let Err(e) = self.0.set_size(ino.0, end) {
                        return reply.error(e);
                    }
                }
                reply.ok()
            }
            libc::FALLOC_FL_KEEP_SIZE => reply.ok(),
            _ => reply.error(Errno::from_i32(libc::EOPNOTSUPP)),
        }
    }
}

/// Total and free 4 KiB blocks of the file system holding `dir`.
fn statvfs(dir: &std::path::Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let mut s: libc::statvfs = unsafe_zeroed_statvfs();
    // SAFETY: `c` is a NUL-terminated path and `s` a valid, writable statvfs.
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut s) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)] // u32 on some targets
    let f = s.f_frsize as u64;
    #[allow(clippy::unnecessary_cast)]
    let (blocks, avail) = (s.f_blocks as u64, s.f_bavail as u64);
    Ok((blocks * f / 4096, avail * f / 4096))
}

fn unsafe_zeroed_statvfs() -> libc::statvfs {
    // SAFETY: statvfs is a plain C struct of integers, for which all-zero bytes are valid.
    unsafe { std::mem::zeroed() }
}
