//! Certificates made in the test with rcgen: a private CA, and leaves it signs.

use rcgen::{date_time_ymd, BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate chain and its key, ready for a rustls server.
pub struct ServerIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// A private certificate authority.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    der: CertificateDer<'static>,
}

impl TestCa {
    /// A CA named `name` (distinct names: a verifier matches issuers by name).
    pub fn new(name: &str) -> Self {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("CA certificate");
        Self {
            der: cert.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The CA certificate, for a client's trust store.
    pub fn root(&self) -> reqwest::Certificate {
        reqwest::Certificate::from_der(&self.der).expect("DER certificate")
    }

    /// A leaf for `names`, valid now.
    pub fn leaf(&self, names: &[&str]) -> ServerIdentity {
        self.sign(leaf_params(names))
    }

    /// A leaf for `names` that expired in 2021.
    pub fn expired_leaf(&self, names: &[&str]) -> ServerIdentity {
        let mut params = leaf_params(names);
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2021, 1, 1);
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> ServerIdentity {
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf");
        ServerIdentity {
            chain: vec![cert.der().clone(), self.der.clone()],
            key: private_key(&key),
        }
    }
}

/// A certificate that signs itself: no client trusts it.
pub fn self_signed(names: &[&str]) -> ServerIdentity {
    let key = KeyPair::generate().expect("key");
    let cert = leaf_params(names).self_signed(&key).expect("self-signed");
    ServerIdentity {
        chain: vec![cert.der().clone()],
        key: private_key(&key),
    }
}

fn leaf_params(names: &[&str]) -> CertificateParams {
    let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
    CertificateParams::new(names).expect("names")
}

fn private_key(key: &KeyPair) -> PrivateKeyDer<'static> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()))
}
